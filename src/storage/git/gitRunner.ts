import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../common/log.js';
import { besideModule, forkExecArgv } from '../../common/workerScript.js';
import type { GitExecArgs, GitOutcome } from './gitExec.js';
import { failedRun, type FromRunner, type RunResult, type ToRunner } from './gitRunnerMessages.js';

const CHILD_FILE = fileURLToPath(besideModule(import.meta.url, 'gitRunnerChild'));

/** What one git run is asked to do (see GitRunner.run). */
export interface RunArgs extends GitExecArgs {
  /** Kills git (SIGKILL) when it aborts; the result then says `killed`. */
  signal?: AbortSignal;
}

/**
 * Starts C git in a small process of its own, the git runner (`gitRunnerChild.ts`), instead of in the server.
 * Node starts a child by forking the process that asks (then exec), and a fork copies the whole server's page
 * tables: measured 5.0 ms of the event loop per `execFile('git')` with a 50,000-item organization open (312 MiB
 * of RSS), 2.0 ms at 103 MiB, growing with the server; each mirror push and each repack paid it. The runner is
 * forked once, at the start, when the server is small; each run is then one message each way.
 *
 * If the runner dies, the runs in flight fail (exit code null, the reason in `error`) and the next run starts a
 * new one. `close` ends it; so does the server's death (its channel closes, and it kills its gits).
 */
export class GitRunner {
  private child: ChildProcess | null = null;
  private ready: Promise<ChildProcess> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, (result: RunResult) => void>();
  private closed = false;

  constructor(private readonly logger: Logger) {}

  /** The runner process's id, while one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the runner now (the server does, while it is small); `run` would start it otherwise. */
  start(): Promise<void> {
    return this.started().then(() => undefined);
  }

  async run(args: RunArgs): Promise<GitOutcome> {
    const id = this.nextId++;
    const failed = (error: string): RunResult => failedRun(id, error);
    if (this.closed) return failed('the git runner is stopped');
    if (args.signal?.aborted) return { ...failed('aborted before it started'), killed: true };
    let child: ChildProcess;
    try {
      child = await this.started();
    } catch (err) {
      return failed(`the git runner could not start: ${String(err)}`);
    }
    return new Promise<RunResult>((resolve) => {
      const onAbort = (): void => this.send(child, { type: 'kill', id });
      this.pending.set(id, (result) => {
        args.signal?.removeEventListener('abort', onAbort);
        resolve(result);
      });
      child.channel?.ref();
      args.signal?.addEventListener('abort', onAbort, { once: true });
      const request: ToRunner = { type: 'run', id, argv: args.argv, env: args.env, timeoutMs: args.timeoutMs, maxBuffer: args.maxBuffer, ...(args.input === undefined ? {} : { input: args.input }) };
      this.send(child, request, () => this.settle(id, failed('the git runner is gone')));
    });
  }

  /** Ends the runner (and any git it still runs); later runs fail at once. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (child.connected) child.disconnect();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
    await exited;
    clearTimeout(timer);
  }

  private started(): Promise<ChildProcess> {
    return (this.ready ??= this.fork());
  }

  private fork(): Promise<ChildProcess> {
    const child = fork(CHILD_FILE, [], {
      execArgv: forkExecArgv(),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    // Neither it nor its channel keeps the server's process alive once it is ready; a run in flight refs the channel.
    child.unref();
    child.on('message', (msg: FromRunner) => {
      if (msg.type === 'result') this.settle(msg.id, msg);
    });
    child.on('error', (err) => this.logger.warn('git runner process error', { error: String(err) }));
    const ready = new Promise<ChildProcess>((resolve, reject) => {
      child.on('message', (msg: FromRunner) => {
        if (msg.type !== 'ready') return;
        if (this.pending.size === 0) child.channel?.unref();
        resolve(child);
      });
      child.once('exit', (code, signal) => {
        reject(new Error(`the git runner exited before it was ready (${String(code ?? signal)})`));
        this.exited(child, code, signal);
      });
    });
    ready.catch(() => undefined);
    return ready;
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) return;
    this.child = null;
    this.ready = null;
    if (!this.closed) this.logger.warn('git runner process exited; the next git run starts another', { code, signal, inFlight: this.pending.size });
    for (const id of [...this.pending.keys()]) {
      this.settle(id, failedRun(id, 'the git runner exited while git ran'));
    }
  }

  private settle(id: number, result: RunResult): void {
    const done = this.pending.get(id);
    if (!done) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.child?.channel?.unref();
    done(result);
  }

  /** Sends `msg`; `lost` is called when it cannot be (the runner gone): its exit settles the rest. */
  private send(child: ChildProcess, msg: ToRunner, lost?: () => void): void {
    if (!child.connected) return lost?.();
    child.send(msg, (err) => {
      if (err) lost?.();
    });
  }
}
