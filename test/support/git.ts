import { execFile } from 'node:child_process';
import { GitCli } from '../../src/storage/git/gitCli.js';

/** C git with this process's environment, as the server gives it. */
export const hostGit = new GitCli(process.env);

/** Runs C git (the judge of what is on disk) and returns its stdout; rejects with stderr on a non-zero exit. */
export function git(args: string[], options: { cwd?: string; gitdir?: string } = {}): Promise<string> {
  const argv = options.gitdir ? ['--git-dir', options.gitdir, ...args] : args;
  return new Promise((resolve, reject) => {
    execFile('git', argv, { cwd: options.cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${argv.join(' ')} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** Number of commits on main. */
export async function commitCount(gitdir: string): Promise<number> {
  return Number((await git(['rev-list', '--count', 'main'], { gitdir })).trim());
}

/**
 * `git fsck --strict`; rejects when git finds anything wrong. Uses the store's own
 * runner, which tolerates loose objects moved into a pack by a concurrent repack.
 */
export async function fsckStrict(gitdir: string): Promise<void> {
  const { code, output } = await hostGit.fsckStrict(gitdir);
  if (code !== 0) throw new Error(`git --git-dir ${gitdir} fsck --strict failed: ${output}`);
}
