import { createHash, createHmac } from 'node:crypto';
import type { ChangeView } from './changes.js';
import type { CommitEvent } from './events.js';

/** What a hook may ask for: the change-feed kinds (`events`, default all three). */
export const CHANGE_KINDS = ['created', 'updated', 'deleted'] as const;

/** The `X-Knowledge-Event` of a delivery: the changes of one commit. */
export const DELIVERY_EVENT = 'changes';

/** Deliveries are retried for this long after their first attempt, then given up (status `failed`). */
export const RETRY_FOR_MS = 24 * 60 * 60 * 1000;

/** No wait between two attempts is longer than this. */
const MAX_DELAY_MS = 60 * 60 * 1000;

/** How a delivery is sent (app/ gives the real HTTP client; the domain does no I/O of its own). */
export type WebhookSender = (request: { url: string; headers: Record<string, string>; body: string; timeoutMs: number }) => Promise<{ status: number }>;

/**
 * The wait before attempt `n + 1` after `n` failed ones: base, 2×base, 4×base, … up to an hour. With the
 * default 30 s base: 30 s, 1 min, 2 min, 4 min, 8 min, 16 min, 32 min, then hourly, about 30 attempts a day.
 */
export function retryDelayMs(failedAttempts: number, baseMs: number): number {
  return Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.max(0, failedAttempts - 1));
}

/** The same id for every attempt at one commit's delivery to one hook, so a receiver can drop a repeat. */
export function deliveryId(hookId: string, commitId: string): string {
  return `dlv_${createHash('sha256').update(`${hookId}:${commitId}`).digest('hex').slice(0, 24)}`;
}

/** `X-Knowledge-Signature`: the receiver recomputes it over the raw body with its secret and compares. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** The hook's own filter over what its creator may see: a folder and the kinds of change. */
export function hookChanges(event: CommitEvent | null, hook: { prefix: string | null; events: readonly string[] }): ChangeView[] {
  if (!event) return [];
  return event.changes.filter((c) => hook.events.includes(c.change) && (hook.prefix === null || c.path.startsWith(hook.prefix)));
}

/** The POST a delivery sends: body and headers (the body is the SSE event's data with the delivery's ids). */
export function deliveryRequest(args: {
  hook: { id: string; secret: string };
  event: CommitEvent;
  changes: ChangeView[];
  id: string;
}): { body: string; headers: Record<string, string> } {
  const { hook, event, changes, id } = args;
  const body = JSON.stringify({ id, webhookId: hook.id, event: DELIVERY_EVENT, organizationId: event.organizationId, commitId: event.commitId, timestamp: event.timestamp, changes });
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': 'knowledge-store-webhooks',
      'X-Knowledge-Event': DELIVERY_EVENT,
      'X-Knowledge-Delivery': id,
      'X-Knowledge-Signature': signature(hook.secret, body),
    },
  };
}
