import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import { Waker } from '../common/waker.js';
import type { KeyStore } from '../storage/keys/keyStore.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import type { DeliveryRecord, WebhookRecord } from '../storage/webhooks/webhookFile.js';
import type { ChangeView } from './changes.js';
import type { CommitEvent, EventFeed } from './events.js';
import { actorOfKey, type Actor } from './keys.js';
import { deliveryId, deliveryRequest, hookChanges, retryDelayMs, RETRY_FOR_MS, type WebhookSender } from './webhookDelivery.js';

/** Deliveries kept in a hook's log (GET /webhooks/{id}/deliveries), and attempts kept per delivery. */
const DELIVERIES_KEPT = 50;
const ATTEMPTS_KEPT = 50;

/** The pause before a failed worker runs again, doubling up to the second. */
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = 60_000;

/** What a hook's worker is given. */
export interface WorkerDeps {
  repo: OrgRepo;
  keys: KeyStore;
  feed: EventFeed;
  send: WebhookSender;
  settings: { retryBaseMs: number; timeoutMs: number };
  clock: Clock;
  logger: Logger;
  /** Writes the organization's hooks durably (the hook's record is changed in place before). */
  persist(): Promise<void>;
}

/**
 * Delivers one hook's commits, one at a time and in commit order: the next commit's delivery waits until
 * the one before is delivered or given up (after a day of retries). It walks the same feed as the event
 * stream, as the hook's creator key sees it at delivery time, then applies the hook's folder and kinds.
 * Each attempt is recorded durably before the next is scheduled, so a restart resumes the same delivery
 * (same id, same attempt log, same schedule). Delivery is at least once: a crash after the receiver's 2xx
 * and before it was recorded sends that delivery again, with the same `X-Knowledge-Delivery`.
 */
export class HookWorker {
  private readonly waker = new Waker();
  private stopped = false;
  readonly done: Promise<void>;

  constructor(
    readonly hook: WebhookRecord,
    private readonly deps: WorkerDeps,
  ) {
    this.done = this.supervise();
  }

  /**
   * Runs the loop again after a failure (a git read or the key store failing: EMFILE, a disk hiccup), after a
   * pause that doubles up to a minute: the hook stays active and its cursor is durable, so nothing is lost,
   * but without this its deliveries would stop until the next restart with no sign of it.
   */
  private async supervise(): Promise<void> {
    let pause = RESTART_FIRST_MS;
    while (!this.stopped) {
      try {
        await this.run();
        return;
      } catch (err) {
        this.deps.logger.error('webhook worker failed; it runs again after a pause', { webhook: this.hook.id, pauseMs: pause, error: String(err) });
        // The whole pause, whatever commits come meanwhile (the next run walks them all); a stop ends it at once.
        const until = Date.now() + pause;
        while (!this.stopped && Date.now() < until) {
          this.waker.clear();
          await this.waker.wait(until - Date.now());
        }
        pause = Math.min(pause * 2, RESTART_MAX_MS);
      }
    }
  }

  /** A new commit may be there. */
  wake(): void {
    this.waker.ring();
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.waker.ring();
    return this.done;
  }

  private async run(): Promise<void> {
    const { hook, deps } = this;
    while (!this.stopped && hook.state === 'active') {
      this.waker.clear();
      const actor = await this.creator();
      if (!actor) return;
      let delivered = false;
      for await (const { commitId, event } of deps.feed.walk({ repo: deps.repo, actor, cursor: hook.cursor })) {
        if (this.stopped) return;
        const changes = hookChanges(event, hook);
        // Nothing for this hook: done with the commit (kept in memory; written with the next delivery).
        if (!event || changes.length === 0) {
          hook.cursor = commitId;
          continue;
        }
        await this.deliver(event, changes);
        // Walk again from the new cursor, with the creator's key looked at again.
        delivered = true;
        break;
      }
      if (!delivered) await this.waker.wait();
    }
  }

  /** The creator's actor now; when the key is revoked (or gone) the hook stops for good. */
  private async creator(): Promise<Actor | null> {
    const key = await this.deps.keys.get(this.hook.createdBy);
    const actor = key && key.orgId === this.deps.repo.orgId ? actorOfKey(key) : null;
    if (!actor) {
      this.hook.state = 'stopped';
      this.hook.stoppedReason = 'The key that created this webhook was revoked';
      await this.deps.persist();
    }
    return actor;
  }

  /** Tries until delivered, given up, or stopped (then the next start resumes it). */
  private async deliver(event: CommitEvent, changes: ChangeView[]): Promise<void> {
    const { hook, deps } = this;
    const id = deliveryId(hook.id, event.commitId);
    let record: DeliveryRecord | undefined = hook.deliveries[0];
    if (record?.id !== id || record.status !== 'pending') {
      record = { id, commitId: event.commitId, status: 'pending', attempts: [], nextAttemptAt: deps.clock().toISOString() };
      hook.deliveries.unshift(record);
      hook.deliveries.splice(DELIVERIES_KEPT);
    }
    const { body, headers } = deliveryRequest({ hook, event, changes, id });
    for (let failed = record.attempts.length; !this.stopped; ) {
      const due = Date.parse(record.nextAttemptAt ?? '') - deps.clock().getTime();
      if (due > 0) {
        await this.waker.wait(due);
        continue;
      }
      const started = deps.clock();
      let status: number | null = null;
      let error: string | null = null;
      try {
        status = (await deps.send({ url: hook.url, headers, body, timeoutMs: deps.settings.timeoutMs })).status;
        if (status < 200 || status > 299) error = `HTTP ${status}`;
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const now = deps.clock();
      record.attempts.push({ at: started.toISOString(), status, error, ms: now.getTime() - started.getTime() });
      record.attempts.splice(0, Math.max(0, record.attempts.length - ATTEMPTS_KEPT));
      failed++;
      const firstAt = Date.parse(record.attempts[0]?.at ?? started.toISOString());
      if (error === null || now.getTime() - firstAt >= RETRY_FOR_MS) {
        record.status = error === null ? 'delivered' : 'failed';
        record.nextAttemptAt = null;
        hook.cursor = event.commitId;
      } else {
        record.nextAttemptAt = new Date(now.getTime() + retryDelayMs(failed, deps.settings.retryBaseMs)).toISOString();
      }
      await deps.persist();
      if (record.status !== 'pending') return;
      deps.logger.warn('webhook delivery failed; will retry', { webhook: hook.id, delivery: id, error, nextAttemptAt: record.nextAttemptAt });
    }
  }
}
