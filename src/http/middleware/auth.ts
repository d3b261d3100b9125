import type { Middleware } from 'koa';
import type { Clock } from '../../common/clock.js';
import { authenticate, type SecretHashes } from '../../domain/keys.js';
import type { KeyStore } from '../../storage/keys/keyStore.js';
import type { OrgStore } from '../../storage/repo/orgStore.js';
import { Unauthorized } from '../httpErrors.js';
import type { AppState } from '../state.js';

/** `Authorization: Bearer <key>`, or `X-API-Key: <key>`. */
export function presentedKey(authorization: string, apiKeyHeader: string): string | undefined {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  if (bearer) return bearer[1];
  return apiKeyHeader.trim() || undefined;
}

/**
 * Runs before anything else is looked at: a missing, unknown or revoked key is
 * 401 `Invalid API key` on every API route, known or not. The key's organization
 * is held open (OrgStore.hold) until the request is done with it: its handlers
 * have settled and its answer has ended (a body streamed after them, an event
 * stream), whichever comes last.
 */
export function requireApiKey(deps: { keys: KeyStore; orgs: OrgStore; clock?: Clock; hashes?: SecretHashes }): Middleware<AppState> {
  return async (ctx, next) => {
    const actor = await authenticate({ keys: deps.keys, secret: presentedKey(ctx.get('Authorization'), ctx.get('X-API-Key')), clock: deps.clock, hashes: deps.hashes });
    const lease = actor && (await deps.orgs.hold(actor.orgId));
    if (!actor || !lease) throw new Unauthorized();
    ctx.state.actor = actor;
    ctx.state.repo = lease.repo;
    let handled = false;
    const { res } = ctx;
    const ended = (): void => {
      if (handled && res.closed) lease.release();
    };
    res.once('close', ended);
    try {
      await next();
    } finally {
      handled = true;
      ended();
    }
  };
}
