import { execFile } from 'node:child_process';

/** What a C git run did: its exit code and both streams. Never rejects. */
export interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment C git runs with in these tests: no prompts, no credential
 * helper, no user or system configuration that could change what it does.
 */
export function gitEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.invalid',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.invalid',
    ...extra,
  };
}

/** Runs C git to completion and reports what happened, success or not. */
export function runGit(
  args: string[],
  options: { cwd?: string; gitdir?: string; env?: NodeJS.ProcessEnv; input?: string | Buffer } = {},
): Promise<GitRun> {
  const argv = options.gitdir ? ['--git-dir', options.gitdir, ...args] : args;
  return new Promise((resolve) => {
    const child = execFile(
      'git',
      argv,
      { cwd: options.cwd, env: gitEnv(options.env), maxBuffer: 64 * 1024 * 1024, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** A run that must succeed; returns stdout. */
export async function gitOk(args: string[], options: Parameters<typeof runGit>[1] = {}): Promise<string> {
  const run = await runGit(args, options);
  if (run.code !== 0) throw new Error(`git ${args.join(' ')} exited ${run.code}\n${run.stderr}`);
  return run.stdout;
}

/** `http://x:<key>@host:port/git/<org>.git`, the clone URL (see README, Backups and git access). */
export function cloneUrl(serverUrl: string, key: string | undefined, orgId = 'default'): string {
  const url = new URL(serverUrl);
  const auth = key === undefined ? '' : `x:${encodeURIComponent(key)}@`;
  return `http://${auth}${url.host}/git/${orgId}.git`;
}

/** The HTTP Basic header git sends for `x:<key>`. */
export const basicAuth = (key: string, user = 'x'): string => `Basic ${Buffer.from(`${user}:${key}`, 'utf8').toString('base64')}`;
