import { spawn } from 'node:child_process';
import { commitCount, git } from '../../support/git.js';
import { onServerCpu, type Pinning } from '../machine.js';

/**
 * The commit loops the PUT figures are held against, each run in its
 * own process on the server CPU and reporting commits per second.
 *
 * Anchor (b): the native `git` CLI committing one changed file per commit with
 * plumbing, in a bare repository of the same size as ours (a copy of the same
 * fixture), durably: every git runs with `core.fsync=all` and
 * `core.fsyncMethod=fsync` (objects, index and refs fsynced, as our server
 * fsyncs what it writes). Per commit: `hash-object -w --stdin`,
 * `update-index --cacheinfo` (on an index read from main once, via
 * GIT_INDEX_FILE), `write-tree`, `commit-tree -p`, `update-ref <new> <old>`.
 *
 * The loop is a bash script (bash forks git as cheaply as anything can), timed
 * with bash's own clock ($EPOCHREALTIME) so no extra process runs per commit;
 * it runs on the server CPU with every git it starts.
 *
 * Anchor (c): the naive isomorphic-git way (naiveIsomorphicGitLoop.ts).
 */
export const FSYNC_CONFIG = ['-c', 'core.fsync=all', '-c', 'core.fsyncMethod=fsync'] as const;

const SCRIPT = String.raw`
set -euo pipefail
export GIT_DIR="$1"
items="$2"
limit_us=$(( $3 * 1000000 ))
export GIT_INDEX_FILE="$GIT_DIR/bench-plumbing-index"
export GIT_AUTHOR_NAME=plumbing GIT_AUTHOR_EMAIL=plumbing GIT_COMMITTER_NAME=plumbing GIT_COMMITTER_EMAIL=plumbing
g() { git -c core.fsync=all -c core.fsyncMethod=fsync "$@"; }
git read-tree refs/heads/main
head=$(git rev-parse refs/heads/main)
start=\${EPOCHREALTIME/./}
i=0
while :; do
  t=\${EPOCHREALTIME/./}
  (( t - start >= limit_us )) && break
  k=$(( (i * 7919) % items ))
  path=$(printf 'bench/f%03d/item-%04d.md' $(( k / 1000 )) $(( k % 1000 )))
  oid=$(printf '# Item %d\n\nPlumbing version %d of item %d.\n' "$k" "$i" "$k" | g hash-object -w --stdin)
  g update-index --cacheinfo "100644,$oid,$path"
  tree=$(g write-tree)
  new=$(g commit-tree "$tree" -p "$head" -m "Update $path")
  g update-ref refs/heads/main "$new" "$head"
  head=$new
  i=$(( i + 1 ))
done
end=\${EPOCHREALTIME/./}
echo "$i $(( end - start ))"
`.replace(/\\\$\{/g, '${'); // String.raw keeps the \ that stops JS interpolating bash's ${...}

export interface CommitLoopResult {
  commits: number;
  seconds: number;
  commitsPerSecond: number;
  /** Commits git counts on main after the run minus before: must equal `commits`. */
  counted: number;
}

export async function runGitPlumbing(args: { gitdir: string; items: number; durationS: number; pinning: Pinning }): Promise<CommitLoopResult> {
  const before = await commitCount(args.gitdir);
  const { cmd, args: argv } = onServerCpu(args.pinning, 'bash', ['-c', SCRIPT, 'plumbing', args.gitdir, String(args.items), String(Math.round(args.durationS))]);
  const out = await output(cmd, argv, 'git plumbing loop');
  const m = /^(\d+) (\d+)$/m.exec(out.trim());
  if (!m) throw new Error(`git plumbing loop printed ${JSON.stringify(out)}`);
  const commits = Number(m[1]);
  const seconds = Number(m[2]) / 1e6;
  const counted = (await commitCount(args.gitdir)) - before;
  return { commits, seconds, commitsPerSecond: commits / seconds, counted };
}

/** Runs the naive isomorphic-git loop (anchor c) in its own process on the server CPU. */
export async function runNaiveIsomorphicGit(args: { dir: string; files: number; durationS: number; pinning: Pinning }): Promise<CommitLoopResult> {
  const script = new URL('./naiveIsomorphicGitLoop.ts', import.meta.url).pathname;
  const { cmd, args: argv } = onServerCpu(args.pinning, process.execPath, ['--import', 'tsx', script, args.dir, String(args.files), String(args.durationS)]);
  const out = await output(cmd, argv, 'isomorphic-git loop');
  const { commits, seconds } = JSON.parse(out.trim().split('\n').pop() as string) as { commits: number; seconds: number };
  const counted = Number((await git(['rev-list', '--count', 'main'], { cwd: args.dir })).trim()) - 1;
  return { commits, seconds, commitsPerSecond: commits / seconds, counted };
}

/** Runs a command to completion and returns its stdout; rejects with its stderr on a non-zero exit. */
function output(cmd: string, argv: string[], what: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${what} failed (exit ${code}): ${stderr.slice(0, 2000)}`))));
  });
}
