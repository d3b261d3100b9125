import type { Logger } from '../../common/log.js';
import { hideCredentials } from '../../common/redact.js';
import type { Slots } from '../../common/slots.js';
import { Waker } from '../../common/waker.js';
import type { GitCli, PushResult } from '../git/gitCli.js';
import { redactUrl, type ReplicationSettings } from './remotes.js';

/**
 * `ok`: the last push went through; `pushing`: a push is under way and none failed before it;
 * `failing`: the last push failed (remote down, not a git repository, timed out), retried with backoff;
 * `rejected`: the mirror refused the push (its main is not an ancestor of ours: someone wrote to it),
 * retried with backoff too, never forced.
 */
export type MirrorState = 'ok' | 'pushing' | 'failing' | 'rejected';

/** One mirror's progress, as the worker keeps it (lags are worked out by the organization's replicator). */
export interface MirrorProgress {
  /** The URL with credentials hidden. */
  url: string;
  state: MirrorState;
  /** The last commit the mirror is known to have as main (null: none yet, since this data directory was made). */
  pushedCommit: string | null;
  pushedAt: Date | null;
  /** Failed attempts in a row (0 after a success). */
  failures: number;
  /** What git said at the last failure, credentials hidden (null after a success). */
  lastError: string | null;
  /** When the next retry is due (null unless failing or rejected). */
  nextRetryAt: Date | null;
}

export interface MirrorWorkerDeps {
  orgId: string;
  gitdir: string;
  url: string;
  git: GitCli;
  settings: Pick<ReplicationSettings, 'timeoutMs' | 'retryBaseMs' | 'retryMaxMs' | 'intervalMs'>;
  /** Pushes across the process share these (each is a C git process). */
  slots: Slots;
  logger: Logger;
  /** The head to push now (the repository's main). */
  head(): string | null;
  /** Where the mirror was last known to be (read from disk at start). */
  known: { commit: string; at: Date } | null;
  /** Records a successful push (so that a restart knows the lag); never throws. */
  remember(commit: string, at: Date): Promise<void>;
  /** Told after every push, whatever its outcome (metrics). */
  pushed(outcome: PushResult['outcome'], seconds: number): void;
}

/**
 * Keeps one mirror of one organization up to date, in the background: one push in flight at a time, and
 * pushes coalesce (a push sends the head as it is when it starts; if the head moved meanwhile, the next
 * push follows at once). The first push is made at start even if the mirror is believed up to date, so a
 * mirror that was reset or replaced is caught up. Failures are retried after a pause that doubles from
 * `retryBaseMs` up to `retryMaxMs`, reset by a success. Nothing here is awaited by a writer.
 */
export class MirrorWorker {
  private readonly waker = new Waker();
  private readonly abort = new AbortController();
  private stopped = false;
  private confirmed = false;
  /** When the last push started (Date.now()), for the least interval between two pushes. */
  private lastStart = 0;
  private readonly progress: MirrorProgress;
  readonly done: Promise<void>;

  constructor(private readonly deps: MirrorWorkerDeps) {
    this.progress = {
      url: redactUrl(deps.url),
      state: 'pushing',
      pushedCommit: deps.known?.commit ?? null,
      pushedAt: deps.known?.at ?? null,
      failures: 0,
      lastError: null,
      nextRetryAt: null,
    };
    this.done = this.run();
  }

  /** The head moved. */
  wake(): void {
    this.waker.ring();
  }

  status(): Readonly<MirrorProgress> {
    return { ...this.progress };
  }

  /** Stops the loop and kills a push under way (the mirror keeps what it had; the next start pushes again). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.waker.ring();
    await this.done;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.waker.clear();
      const head = this.deps.head();
      if (head && (!this.confirmed || head !== this.progress.pushedCommit)) {
        await this.untilDue();
        if (this.stopped) return;
        await this.deps.slots.run(() => this.push(head));
        continue;
      }
      await this.waker.wait();
    }
  }

  /**
   * Waits out the backoff after a failure, and the least interval between two pushes (commits meanwhile
   * ride on the next push); new commits cut neither short, a stop does.
   */
  private async untilDue(): Promise<void> {
    const due = Math.max(this.progress.nextRetryAt?.getTime() ?? 0, this.lastStart + this.deps.settings.intervalMs);
    while (!this.stopped && Date.now() < due) {
      this.waker.clear();
      await this.waker.wait(due - Date.now());
    }
  }

  private async push(head: string): Promise<void> {
    if (this.stopped) return;
    const { deps, progress } = this;
    // Pushes the head as it is now (newer than `head` when the slot took a while).
    const commit = deps.head() ?? head;
    if (progress.state === 'ok') progress.state = 'pushing';
    this.lastStart = Date.now();
    const started = process.hrtime.bigint();
    const result = await deps.git.push({ gitdir: deps.gitdir, url: deps.url, commit, timeoutMs: deps.settings.timeoutMs, signal: this.abort.signal });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (this.stopped && result.outcome !== 'pushed') return;
    deps.pushed(result.outcome, seconds);
    if (result.outcome === 'pushed') return this.succeeded(commit);
    const error = hideCredentials(gitReason(result.output), deps.url);
    const pause = Math.min(deps.settings.retryBaseMs * 2 ** Math.min(progress.failures, 30), deps.settings.retryMaxMs);
    const state: MirrorState = result.outcome === 'rejected' ? 'rejected' : 'failing';
    if (state !== progress.state || error !== progress.lastError) {
      const why = state === 'rejected' ? 'the mirror refused the push (its main has commits this server does not: nothing was forced)' : 'a push to a mirror failed';
      deps.logger.warn(why, { org: deps.orgId, remote: progress.url, error, failures: progress.failures + 1, retryInMs: pause });
    }
    progress.state = state;
    progress.failures++;
    progress.lastError = error;
    progress.nextRetryAt = new Date(Date.now() + pause);
  }

  private async succeeded(commit: string): Promise<void> {
    const { deps, progress } = this;
    const at = new Date();
    if (progress.state === 'failing' || progress.state === 'rejected') {
      deps.logger.info('a mirror is reachable again and caught up', { org: deps.orgId, remote: progress.url, failures: progress.failures });
    }
    Object.assign(progress, { state: 'ok', pushedCommit: commit, pushedAt: at, failures: 0, lastError: null, nextRetryAt: null });
    this.confirmed = true;
    await deps.remember(commit, at);
  }
}

/** What git said that tells why (its hints and progress left out), at most 500 characters. */
function gitReason(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^(hint:|Done$|To )/.test(l))
    .map((l) => l.replace(/^!\t\S+\t/, 'refused: '));
  const tail = lines.slice(-3).join(' | ');
  return (tail || 'git push failed without a message').slice(-500);
}
