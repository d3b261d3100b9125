import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** A worker module beside `from` (an `import.meta.url`): `.ts` under tsx (tests), `.js` once built. */
export function besideModule(from: string, name: string): URL {
  return new URL(`./${name}${extname(fileURLToPath(from))}`, from);
}

/**
 * What `new Worker` runs for a worker module. A worker does not inherit tsx's loader: under tsx (the tests) it
 * registers it first, then loads the TypeScript file; built, it is the plain file.
 */
export function workerScript(file: URL): { script: URL | string; eval: boolean } {
  if (!file.pathname.endsWith('.ts')) return { script: file, eval: false };
  // The ESM entry beside the CommonJS one `require` finds (this file may run as either).
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  return { script: `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(file.href)}); });`, eval: true };
}

/**
 * The flags a forked helper process (the event fan-out, the git runner) is started with: the server's own (a
 * TypeScript loader in development), but not a debugger's port, which the server holds, nor a script given to
 * `-e` or `-p`, which the helper would run instead of its own file.
 */
export function forkExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    if (arg === '-e' || arg === '--eval' || arg === '-p' || arg === '--print') {
      i++; // and its script
      continue;
    }
    if (arg.startsWith('--inspect') || arg.startsWith('--eval=') || arg.startsWith('--print=')) continue;
    kept.push(arg);
  }
  return kept;
}
