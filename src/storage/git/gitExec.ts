import { spawn } from 'node:child_process';

/** How a git ended. */
export interface GitOutcome {
  /** The exit code; null when git was killed or never started. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Killed: by the timeout, or by its caller. */
  killed: boolean;
  /** Why it failed when there is no exit code (git not found, output over maxBuffer, killed). */
  error: string | null;
}

export interface GitExecArgs {
  argv: string[];
  env: NodeJS.ProcessEnv;
  /** Written to git's standard input, then closed (none: closed at once). */
  input?: string;
  timeoutMs: number;
  maxBuffer: number;
}

/** A git started by execGit: how it ends, and a way to end it sooner. */
export interface RunningGit {
  done: Promise<GitOutcome>;
  /** SIGKILL to git and to everything it started (ssh, a hook, an alias's shell). */
  kill(): void;
}

/**
 * Runs C git to its end, in the process that calls it (the git runner, or a tool), in a process group of its
 * own: a timeout or a kill then ends what git started too (ssh for a push, a shell), which would otherwise keep
 * running, and keep git's output open, after git itself was killed.
 */
export function execGit(args: GitExecArgs): RunningGit {
  const child = spawn('git', args.argv, { env: args.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let killed = false;
  let overflow = false;
  /** Its output closed and it exited: nothing of it is left to kill (its group id may be reused). */
  let closed = false;
  const kill = (): void => {
    if (child.pid === undefined || closed) return;
    killed = true;
    try {
      // The group, even once git has exited: what it started may still hold its output open.
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL'); // no group left: git alone, if it still runs
    }
  };
  const out = { stdout: [] as Buffer[], stderr: [] as Buffer[], bytes: 0 };
  const collect = (into: Buffer[]) => (chunk: Buffer) => {
    out.bytes += chunk.length;
    if (out.bytes > args.maxBuffer) {
      overflow = true;
      kill();
    } else into.push(chunk);
  };
  child.stdout.on('data', collect(out.stdout));
  child.stderr.on('data', collect(out.stderr));
  const timer = setTimeout(kill, args.timeoutMs);
  const done = new Promise<GitOutcome>((resolve) => {
    let spawnError: Error | null = null;
    child.on('error', (err) => (spawnError = err));
    child.on('close', (code) => {
      closed = true;
      clearTimeout(timer);
      const stdout = Buffer.concat(out.stdout).toString('utf8');
      const stderr = Buffer.concat(out.stderr).toString('utf8');
      const error = overflow ? `output over ${args.maxBuffer} bytes` : killed ? 'killed' : spawnError ? String(spawnError) : code === null ? 'ended by a signal' : null;
      resolve({ code: killed || overflow || spawnError ? null : code, stdout, stderr, killed: killed && !overflow, error });
    });
  });
  child.stdin.on('error', () => undefined); // git may stop reading early; its exit code tells
  child.stdin.end(args.input ?? '');
  return { done, kill };
}
