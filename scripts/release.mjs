// `npm run release [-- <dir>]`: the production artifact, knowledge-store-<version>.tgz in <dir> (default: .).
// It is `npm pack` of a fresh build, so it holds dist/ (compiled, with the dashboard bundle) and no sources,
// and it carries npm-shrinkwrap.json, a copy of package-lock.json: npm packs a shrinkwrap but never a
// package-lock, and without a lockfile `npm ci` refuses to run. On the server, unpacked:
// `npm ci --omit=dev && npm start` installs exactly the locked production dependencies and needs no compiler.
// The package is staged in a temporary directory, so the checkout never holds a shrinkwrap (which would
// take precedence over package-lock.json there).
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const out = resolve(process.argv[2] ?? '.');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
const stage = mkdtempSync(join(tmpdir(), 'knowledge-store-release-'));
try {
  // What package.json's `files` keeps of these is what is packed; the rest of dist/ (tests, maps) is left out.
  for (const path of ['package.json', 'README.md', 'scripts', 'dist/src', 'dist/dashboard']) cpSync(join(root, path), join(stage, path), { recursive: true });
  copyFileSync(join(root, 'package-lock.json'), join(stage, 'npm-shrinkwrap.json'));
  // Built above: packing runs no script (`prepare` would build again).
  const packed = JSON.parse(execFileSync(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', out], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  process.stdout.write(`${join(out, packed[0].filename)}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
