/**
 * Anchor (c) of the benchmark (README, Performance): the naive isomorphic-git way, a working tree and an
 * index: per commit `fs.writeFile` of one file, `git.add`, `git.commit`. It is
 * what a first implementation would do; isomorphic-git fsyncs nothing, so it is
 * not even durable. The repository (non-bare, `files` files on disk, one commit)
 * is set up with C git, untimed.
 *
 * Run as its own process (the bench pins it to the server CPU):
 * `node --import tsx test/bench/anchor./naiveIsomorphicGitLoop.ts <dir> <files> <seconds>`;
 * prints one JSON line `{"commits":…,"seconds":…}`.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import git from 'isomorphic-git';

const [dir, filesArg, secondsArg] = process.argv.slice(2);
if (!dir || !filesArg || !secondsArg) throw new Error('usage: naiveIsomorphicGitLoop.ts <dir> <files> <seconds>');
const files = Number(filesArg);
const limitMs = Number(secondsArg) * 1000;
const pathOf = (k: number): string => `bench/f${String(Math.floor(k / 1000)).padStart(3, '0')}/item-${String(k % 1000).padStart(4, '0')}.md`;

await rm(dir, { recursive: true, force: true });
for (let k = 0; k < files; k++) {
  const path = join(dir, pathOf(k));
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, `# Item ${k}\n\nVersion 1.\n`);
}
const run = (...args: string[]): void => void execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
run('init', '-q', '-b', 'main');
run('add', '-A');
run('-c', 'user.name=naive', '-c', 'user.email=naive', 'commit', '-q', '-m', 'initial');

const author = { name: 'naive', email: 'naive' };
const start = performance.now();
let commits = 0;
while (performance.now() - start < limitMs) {
  const k = (commits * 7919) % files;
  const filepath = pathOf(k);
  await writeFile(join(dir, filepath), `# Item ${k}\n\nNaive version ${commits} of item ${k}.\n`);
  await git.add({ fs, dir, filepath });
  await git.commit({ fs, dir, message: `Update ${filepath}`, author });
  commits++;
}
const seconds = (performance.now() - start) / 1000;
process.stdout.write(`${JSON.stringify({ commits, seconds })}\n`);
