// `npm run build`, and what `prepare` and `prestart` run. Plain JavaScript on purpose: it must run where
// no compiler is installed (a production install: `npm ci --omit=dev`).
//
// - In a checkout (src/ is there) with TypeScript installed (after `npm install`): compiles to dist/ (tsc, incremental) and
//   bundles the dashboard (esbuild).
// - Otherwise dist/ must already be there: a release artifact (`npm run release`) carries dist/ and no
//   sources, so there is nothing to compile. A source checkout installed without dev dependencies, whose
//   dist/ is missing or older than its sources, is refused with what to do instead.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
/** What `npm start` runs and the dashboard it serves: a build is usable only with both. */
const OUTPUTS = ['dist/src/cli/main.js', 'dist/dashboard/app.js'];

function hasCompiler() {
  try {
    createRequire(join(root, 'package.json')).resolve('typescript');
    return true;
  } catch {
    return false;
  }
}

/** Source files, each with the output that must be newer than it. */
function* sourcesWithOutputs(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const rel = relative(root, path);
    if (entry.isDirectory()) yield* sourcesWithOutputs(path);
    // The dashboard's client code and static files end up in the bundle dir, the rest compiled one to one.
    else if (rel.startsWith(join('src', 'dashboard', 'client')) || rel.startsWith(join('src', 'dashboard', 'static'))) yield [path, join(root, 'dist', 'dashboard', 'app.js')];
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield [path, join(root, 'dist', rel.replace(/\.ts$/, '.js'))];
  }
}

function staleOutput() {
  for (const [source, output] of sourcesWithOutputs(join(root, 'src'))) {
    if (!existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs) return relative(root, source);
  }
  return null;
}

function refuse(why) {
  process.stderr.write(
    `knowledge-store build: ${why}, and TypeScript is not installed (a source checkout installed without dev dependencies?).\n` +
      '  To run from this checkout: `npm ci` (with dev dependencies), then `npm start`.\n' +
      '  For a production install without a compiler: make a release artifact with `npm run release` where dev\n' +
      '  dependencies are installed, then on the server unpack it and run `npm ci --omit=dev && npm start` (README: Production install).\n',
  );
  process.exit(1);
}

if (existsSync(join(root, 'src')) && hasCompiler()) {
  const run = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  try {
    run([createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc'), '-p', 'tsconfig.json']);
    run(['dist/src/dashboard/build.js']);
  } catch {
    process.exit(1);
  }
  // tsc writes files without the executable bit; the command's file is run by name (npx knowledge-store,
  // a package's bin link), so it needs it, and `npm pack` keeps it for the artifact.
  chmodSync(join(root, 'dist/src/cli/main.js'), 0o755);
} else {
  const missing = OUTPUTS.find((output) => !existsSync(join(root, output)));
  if (missing) refuse(`${missing} is missing`);
  // A release artifact has no src/: its dist/ is the build it was made from.
  const stale = existsSync(join(root, 'src')) ? staleOutput() : null;
  if (stale) refuse(`dist/ is older than ${stale}`);
}
