import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The repository root and the built command-line tool (what `npm start` and `npx knowledge-store` run). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** `KNOWLEDGE_STORE_CLI` points the tests at another build of the tool. */
export const CLI = process.env.KNOWLEDGE_STORE_CLI ?? join(ROOT, 'dist/src/cli/main.js');

const LISTENING = /Knowledge store listening on (http:\/\/\S+) \(data: /;
const ADMIN_KEY = /^Admin API key for organization "default": (ks_\S+)$/m;

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A `knowledge-store serve` child process. */
export interface ServeChild {
  proc: ChildProcess;
  pid: number;
  url: string;
  /** The first-start admin key, when this start printed one. */
  adminKey: string | undefined;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited (at once if it already has). */
  exited: Promise<ChildExit>;
  /** SIGKILL unless it has already exited; waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<ChildExit>;
}

/** Rebuilds `dist/` when a source file is newer than its compiled output (or the build is missing). */
export function ensureBuilt(): Promise<void> {
  // Once per test process: sources do not change while the tests run.
  built ??= build();
  return built;
}

let built: Promise<void> | undefined;

async function build(): Promise<void> {
  if (!(await isStale())) return;
  await new Promise<void>((resolve, reject) => {
    execFile('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT }, async (err, stdout, stderr) => {
      // A clean run is a fresh build, even where an output stays older than its source: tsc's incremental
      // build skips re-emitting a file whose content did not change (touched, or checked out again).
      // tsc emits even with type errors; then what matters is that every output was written.
      if (err && (await isStale().catch(() => true))) reject(new Error(`build failed: ${err?.message ?? ''}\n${stdout}${stderr}`));
      else resolve();
    });
  });
}

async function isStale(): Promise<boolean> {
  const sources = await listTs(join(ROOT, 'src'));
  for (const src of sources) {
    const out = join(ROOT, 'dist', src.slice(ROOT.length).replace(/\.ts$/, '.js'));
    const [s, o] = await Promise.all([stat(src), stat(out).catch(() => null)]);
    if (!o || o.mtimeMs < s.mtimeMs) return true;
  }
  return false;
}

/** The dashboard's browser code is not compiled by tsconfig.json (no DOM types there): esbuild bundles it. */
const NOT_COMPILED_BY_TSC = join(ROOT, 'src', 'dashboard', 'client');

async function listTs(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (full === NOT_COMPILED_BY_TSC) continue;
    if (entry.isDirectory()) out.push(...(await listTs(full)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** Every child started here, so a test's `after` can kill whatever is left. */
const started = new Set<ChildProcess>();

/** Kills (SIGKILL) every child started by this module that is still running. */
export async function killAllChildren(): Promise<void> {
  const alive = [...started].filter((p) => p.exitCode === null && p.signalCode === null);
  await Promise.all(
    alive.map(
      (p) =>
        new Promise<void>((resolve) => {
          p.once('exit', () => resolve());
          p.kill('SIGKILL');
        }),
    ),
  );
  started.clear();
}

function trackExit(proc: ChildProcess): Promise<ChildExit> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve({ code: proc.exitCode, signal: proc.signalCode });
    else proc.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/** Starts `node dist/src/cli/main.js <args>` and collects its output. */
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
): { proc: ChildProcess; out: { stdout: string; stderr: string }; exited: Promise<ChildExit> } {
  const proc = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', KNOWLEDGE_DATA_DIR: '', PORT: '', HOST: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(proc);
  const out = { stdout: '', stderr: '' };
  proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exited = trackExit(proc);
  void exited.then(() => started.delete(proc));
  return { proc, out, exited };
}

/** Runs a CLI command to completion. */
export async function runCli(args: string[], timeoutMs = 20_000): Promise<ChildExit & { stdout: string; stderr: string }> {
  const { proc, out, exited } = spawnCli(args);
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const result = await exited;
  clearTimeout(timer);
  return { ...result, ...out };
}

/**
 * `serve --port 0 --data-dir <dataDir>`; resolves once it prints its URL, rejects if it exits first.
 * `env` adds to (or overrides) the environment, e.g. LOG_LEVEL=debug or a rate limit; `args` adds flags.
 */
export async function spawnServe(dataDir: string, timeoutMs = 15_000, env: Record<string, string> = {}, args: string[] = []): Promise<ServeChild> {
  // Flags in `args` come last, so they win (`--port 3001`).
  const { proc, out, exited } = spawnCli(['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...args], env);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`serve did not start within ${timeoutMs} ms\nstdout: ${out.stdout}\nstderr: ${out.stderr}`));
    }, timeoutMs);
    const onData = (): void => {
      const m = LISTENING.exec(out.stdout);
      if (m) {
        clearTimeout(timer);
        proc.stdout?.off('data', onData);
        resolve(m[1] as string);
      }
    };
    proc.stdout?.on('data', onData);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (code ${code}, signal ${signal}) before listening\nstdout: ${out.stdout}\nstderr: ${out.stderr}`));
    });
  });
  return {
    proc,
    pid: proc.pid as number,
    url,
    adminKey: ADMIN_KEY.exec(out.stdout)?.[1],
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    exited,
    kill: async (signal = 'SIGKILL') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}
