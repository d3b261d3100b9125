import { spawn } from 'node:child_process';
import { execGit, type GitOutcome } from './gitExec.js';
import type { GitRunner, RunArgs } from './gitRunner.js';
import { finished, type Readable } from 'node:stream';
import { firstParentLog, type LoggedCommit } from './firstParentLog.js';

/** A running `git upload-pack`: its output, and how it ended. */
export interface UploadPack {
  stdout: Readable;
  /** Resolves with git's exit code and what it wrote on stderr. */
  done: Promise<{ code: number | null; stderr: string }>;
  kill(): void;
}

/** The branch a push updates on a mirror. */
const MAIN_BRANCH = 'refs/heads/main';

/** How a push ended: the mirror took it, refused it as not a fast-forward (or by its own rule), or it failed. */
export interface PushResult {
  outcome: 'pushed' | 'rejected' | 'failed';
  /** What git said (may hold the URL: redact before showing). */
  output: string;
}

export interface ObjectCounts {
  loose: number;
  packs: number;
  /** Bytes in packs. */
  packBytes: number;
}

export interface RepackReport {
  before: ObjectCounts;
  after: ObjectCounts;
  full: boolean;
}

/** `Git-Protocol` header values git sends: `version=2`, possibly with other `key=value` pairs. */
export function sanitizeGitProtocol(header: string): string | undefined {
  const parts = header.split(':').filter((p) => /^[a-z0-9-]+=[a-z0-9.-]+$/i.test(p));
  return parts.length > 0 ? parts.join(':') : undefined;
}

/**
 * C git, run as a child process: it serves clones and fetches (isomorphic-git
 * cannot run upload-pack), repacks, and judges repositories with fsck. The
 * environment git runs with is handed in by whoever builds the process.
 */
export class GitCli {
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    /**
     * Where `run`, `push` and `packObjects` start git: the server's git runner process (a spawn from the server
     * forks it whole, see gitRunner.ts); none: in this process (tools, tests). upload-pack, whose output is
     * streamed to a client, and the history's `git log` start here either way.
     */
    private readonly runner?: GitRunner,
  ) {}

  /**
   * Only upload-pack, and only in stateless-rpc mode, the way `git http-backend`
   * runs it; receive-pack is never started, so nothing can be pushed. git sees
   * nothing of our environment but PATH and HOME, and no system config.
   */
  uploadPack(args: {
    gitdir: string;
    advertiseRefs: boolean;
    protocol?: string;
    input?: Readable;
    /** Kills git when it runs longer than this (a stuck or abusive client). */
    timeoutMs?: number;
  }): UploadPack {
    const argv = ['upload-pack', '--stateless-rpc', ...(args.advertiseRefs ? ['--advertise-refs'] : []), args.gitdir];
    const env: NodeJS.ProcessEnv = { PATH: this.env.PATH, HOME: this.env.HOME, GIT_CONFIG_NOSYSTEM: '1' };
    if (args.protocol) env.GIT_PROTOCOL = args.protocol;
    const child = spawn('git', argv, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    if (!args.input) child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), args.timeoutMs ?? 10 * 60_000);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    if (args.input) {
      // finished(), not on('error'): the request body's pipeline (gunzip, limits) may have failed or closed before
      // git was started, and an error already emitted is never emitted again; git would wait for input until its
      // timeout. finished() reports a stream already errored or closed early at once.
      finished(args.input, (err) => {
        if (err) child.kill('SIGKILL');
      });
      child.stdin.on('error', () => undefined); // git may stop reading early; its exit code tells
      args.input.pipe(child.stdin);
    }
    const done = new Promise<{ code: number | null; stderr: string }>((resolve) => {
      child.on('error', (err) => resolve({ code: -1, stderr: String(err) }));
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
    return { stdout: child.stdout, done, kill: () => child.kill('SIGKILL') };
  }

  /** Runs C git to completion; never throws: the exit code and output tell what happened. */
  async run(argv: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ code: number; output: string }> {
    const ended = await this.exec({
      argv,
      env: this.gitEnv(options.env),
      timeoutMs: options.timeoutMs ?? 30 * 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const why = ended.error === null ? '' : `${ended.error}\n`;
    return { code: ended.code ?? 1, output: `${why}${ended.stdout}${ended.stderr}` };
  }

  /**
   * Pushes `commit` to `url` as its `refs/heads/main`, never forced: a mirror whose main is not an
   * ancestor of `commit` (someone wrote to it) refuses, and that refusal is reported (`rejected`), never
   * overwritten. git is killed (SIGKILL) after `timeoutMs` or when `signal` aborts; a killed push leaves the
   * mirror as it was (receive-pack moves the ref only once the pack is in). No prompt is ever shown: a
   * remote that asks for a password or an unknown ssh host key fails instead of waiting.
   */
  async push(args: { gitdir: string; url: string; commit: string; timeoutMs: number; signal?: AbortSignal }): Promise<PushResult> {
    const env = this.gitEnv();
    if (!env.GIT_SSH_COMMAND) env.GIT_SSH_COMMAND = 'ssh -o BatchMode=yes';
    const argv = ['--git-dir', args.gitdir, '-c', 'protocol.file.allow=always', 'push', '--porcelain', '--quiet', args.url, `${args.commit}:${MAIN_BRANCH}`];
    const ended = await this.exec({ argv, env, timeoutMs: args.timeoutMs, maxBuffer: 1024 * 1024, ...(args.signal ? { signal: args.signal } : {}) });
    const output = `${ended.stdout}${ended.stderr}`.trim();
    if (ended.code === 0) return { outcome: 'pushed', output };
    if (ended.killed) return { outcome: 'failed', output: args.signal?.aborted ? 'push stopped (server stopping)' : `no answer within ${args.timeoutMs} ms (git push killed)` };
    // --porcelain prints "!<tab><src>:<dst><tab>[rejected] (non-fast-forward)" (or "(fetch first)").
    const rejected = /^!\t.*\t\[(?:rejected|remote rejected)\]/m.test(ended.stdout);
    return { outcome: rejected ? 'rejected' : 'failed', output: output || (ended.error ?? `git push exited with ${String(ended.code)}`) };
  }

  /** The commits from `head` back along first parents, newest first (see `firstParentLog`). */
  firstParentLog(gitdir: string, head: string): AsyncGenerator<LoggedCommit> {
    return firstParentLog({ gitdir, head, env: this.env });
  }

  /** `git count-objects -v`, parsed. */
  async countObjects(gitdir: string): Promise<ObjectCounts> {
    const { code, output } = await this.run(['--git-dir', gitdir, 'count-objects', '-v']);
    if (code !== 0) throw new Error(`git count-objects failed: ${output.trim()}`);
    const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(output)?.[1] ?? 0);
    return { loose: field('count'), packs: field('packs'), packBytes: field('size-pack') * 1024 };
  }

  /**
   * Folds packs together. By default geometrically (`git repack -d
   * --geometric=2`): the small packs each group commit writes, and any loose
   * objects, are rolled into one, while large packs that already form a
   * progression are left alone, so the cost follows what is new, not the size
   * of the repository. `full` rewrites everything into one pack with deltas
   * (`-a -d`, as `knowledge-store gc --full`). Safe beside a writer: git never
   * removes an object it did not pack, nor anything unreachable.
   */
  async repack(gitdir: string, options: { full?: boolean } = {}): Promise<RepackReport> {
    const before = await this.countObjects(gitdir);
    const full = options.full ?? false;
    const { code, output } = await this.run(['--git-dir', gitdir, 'repack', '-d', '-q', ...(full ? ['-a'] : ['--geometric=2'])]);
    if (code !== 0) throw new Error(`git repack failed: ${output.trim()}`);
    return { before, after: await this.countObjects(gitdir), full };
  }

  /**
   * `git pack-objects` of exactly the objects named in `input` (`<id>[ <path>]` lines: the path only
   * groups objects for the delta search, as C git's own walk would), written as
   * `<packDir>/pack-<checksum>.pack` and `.idx` (fsynced by git, renamed into place, index last).
   * Returns the checksum. `window`: how many neighbours each object is tried against as a delta.
   */
  async packObjects(args: { gitdir: string; packDir: string; input: string; window: number }): Promise<string> {
    const argv = ['--git-dir', args.gitdir, 'pack-objects', '--delta-base-offset', '--non-empty', '-q', `--window=${args.window}`, `${args.packDir}/pack`];
    const ended = await this.exec({ argv, env: this.gitEnv(), input: args.input, timeoutMs: 30 * 60_000, maxBuffer: 1024 * 1024 });
    const checksum = /^[0-9a-f]{40}$/m.exec(ended.stdout)?.[0];
    if (ended.code === 0 && checksum) return checksum;
    throw new Error(`git pack-objects failed (${String(ended.code)}): ${`${ended.error ?? ''}${ended.stdout}${ended.stderr}`.trim()}`);
  }

  /** The environment git runs with: ours, never prompting for a password, and `extra`. */
  private gitEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return { ...this.env, GIT_TERMINAL_PROMPT: '0', ...extra };
  }

  /** Runs git to its end, in the git runner when there is one (see the constructor). */
  private exec(args: RunArgs): Promise<GitOutcome> {
    if (this.runner) return this.runner.run(args);
    const git = execGit(args);
    const { signal } = args;
    if (!signal) return git.done;
    const kill = (): void => git.kill();
    if (signal.aborted) kill();
    else signal.addEventListener('abort', kill, { once: true });
    return git.done.then((ended) => {
      signal.removeEventListener('abort', kill);
      return ended;
    });
  }

  /**
   * `git fsck --strict`, tolerant of one thing only: a repack running beside it
   * (the server's, or one left running by a server that was killed: SIGKILL does
   * not reach its child git) moves loose objects into a pack while fsck lists
   * them, which fsck reports as "unable to mmap ... No such file or directory".
   * When those are its only complaints, fsck runs again, up to three times.
   */
  async fsckStrict(gitdir: string): Promise<{ code: number; output: string }> {
    let result = await this.run(['--git-dir', gitdir, 'fsck', '--strict', '--no-progress']);
    for (let attempt = 1; attempt < 3 && result.code !== 0 && onlyVanishedLooseObjects(result.output); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      result = await this.run(['--git-dir', gitdir, 'fsck', '--strict', '--no-progress']);
    }
    return result;
  }
}

function onlyVanishedLooseObjects(output: string): boolean {
  const lines = output.split('\n').filter((l) => l.startsWith('error'));
  return (
    lines.length > 0 &&
    lines.every((l) => /unable to mmap .*objects\/[0-9a-f]{2}\/[0-9a-f]{38}: No such file or directory/.test(l) || /object corrupt or missing: .*objects\/[0-9a-f]{2}\/[0-9a-f]{38}$/.test(l))
  );
}
