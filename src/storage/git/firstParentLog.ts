import { spawn } from 'node:child_process';

/** One commit of a first-parent walk, as the history log needs it. */
export interface LoggedCommit {
  commitId: string;
  parent: string | null;
  /** As the pack reader's `parseCommit` gives it (no CR, no leading blank lines, one trailing newline). */
  message: string;
  author: { name: string; email: string; timestamp: number };
}

/** Fields of `--format`, NUL-separated; with `-z` commits are NUL-separated too: six tokens a commit. */
const FORMAT = '%H%x00%P%x00%an%x00%ae%x00%at%x00%B';
const FIELDS = 6;

/**
 * The commits from `head` back along first parents, newest first, streamed from C git's
 * `git log` (about 0.6 s for 51,000 commits, in a process of its own, on another core, while
 * the index is built in ours). Leaving the loop early stops git. Rejects when git fails.
 */
export async function* firstParentLog(args: { gitdir: string; head: string; env: NodeJS.ProcessEnv }): AsyncGenerator<LoggedCommit> {
  const child = spawn('git', ['--git-dir', args.gitdir, 'log', '--first-parent', '-z', `--format=${FORMAT}`, args.head, '--'], {
    env: { ...args.env, GIT_TERMINAL_PROMPT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('error', (err) => {
      stderr += String(err);
      resolve(-1);
    });
    child.on('close', (code) => resolve(code));
  });
  let done = false;
  try {
    let pending: Buffer = Buffer.alloc(0);
    let tokens: string[] = [];
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      pending = pending.byteLength ? Buffer.concat([pending, chunk]) : chunk;
      let at = 0;
      for (let nul = pending.indexOf(0, at); nul >= 0; nul = pending.indexOf(0, at)) {
        tokens.push(pending.toString('utf8', at, nul));
        at = nul + 1;
        if (tokens.length === FIELDS) {
          yield logged(tokens);
          tokens = [];
        }
      }
      pending = pending.subarray(at);
    }
    // The last commit has no NUL after it.
    if (pending.byteLength) tokens.push(pending.toString('utf8'));
    if (tokens.length === FIELDS) yield logged(tokens);
    else if (tokens.length > 0) throw new Error(`git log output ended inside a commit (${tokens.length} fields)`);
    const code = await exited;
    if (code !== 0) throw new Error(`git log failed (exit ${String(code)}): ${stderr.trim()}`);
    done = true;
  } finally {
    if (!done) child.kill('SIGKILL');
  }
}

function logged(tokens: string[]): LoggedCommit {
  const [commitId, parents, name, email, time, body] = tokens as [string, string, string, string, string, string];
  return {
    commitId,
    parent: parents.split(' ')[0] || null,
    message: `${body.replace(/\r/g, '').replace(/^\n+/, '').replace(/\n+$/, '')}\n`,
    author: { name, email, timestamp: Number(time) },
  };
}
