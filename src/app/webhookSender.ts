import { lookup } from 'node:dns/promises';
import { isPrivateAddress } from '../domain/privateAddress.js';
import type { WebhookSender } from '../domain/webhookDelivery.js';

/**
 * Sends webhook deliveries with Node's fetch. Redirects are not followed (a 3xx is a failed attempt: a
 * receiver that moved is re-registered by an admin, and a redirect cannot lead a delivery somewhere the
 * address check would refuse). Unless private addresses are allowed, the receiver's name is resolved first
 * and a private answer fails the attempt.
 */
export function webhookSender(options: { allowPrivate: boolean }): WebhookSender {
  return async ({ url, headers, body, timeoutMs }) => {
    if (!options.allowPrivate) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      const addresses = await lookup(host, { all: true });
      if (addresses.some((a) => isPrivateAddress(a.address))) throw new Error(`${host} resolves to a private address (KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE is off)`);
    }
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError') throw new Error(`no answer within ${timeoutMs} ms`, { cause: err });
      throw new Error(e.cause?.code ?? e.cause?.message ?? e.message, { cause: err });
    }
    // The body is not read: only the status counts. Cancelling frees the connection.
    await res.body?.cancel().catch(() => undefined);
    return { status: res.status };
  };
}
