import { timingSafeEqual, createHash } from 'node:crypto';
import { isIP } from 'node:net';
import Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import type { MetricsAccess } from '../../common/metrics.js';
import { MetricsRefused, MetricsTokenRequired } from '../httpErrors.js';
import { presentedKey } from '../middleware/auth.js';
import type { AppState } from '../state.js';

export const METRICS_PATH = '/metrics';

/** What renders the Prometheus text (app/ backs it with prom-client). */
export type MetricsExposition = () => Promise<{ contentType: string; body: string }>;

/** The socket's peer is this machine, and no proxy header says it speaks for someone else. */
function localClient(ctx: ParameterizedContext<AppState>): boolean {
  const peer = (ctx.req.socket.remoteAddress ?? '').replace(/^::ffff:/i, '');
  const loopback = peer === '::1' || (isIP(peer) === 4 && peer.startsWith('127.'));
  // A reverse proxy on this machine makes every client look local; the headers it adds give it away.
  return loopback && !ctx.get('X-Forwarded-For') && !ctx.get('Forwarded') && !ctx.get('X-Real-IP');
}

/** Compares digests, so neither the token's length nor its bytes leak through timing. */
function sameToken(presented: string, token: string): boolean {
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(presented), digest(token));
}

/**
 * GET /metrics in the Prometheus text format (contract §12), for whom the setting allows; with `off` the
 * route does not exist (404). Not an API route: no API key, no JSON envelope on success.
 */
export function metricsRoutes(deps: { access: MetricsAccess; exposition?: MetricsExposition }): Router<AppState> {
  const router = new Router<AppState>();
  const { access, exposition } = deps;
  if (access.mode === 'off' || !exposition) return router;

  router.get(METRICS_PATH, async (ctx) => {
    if (access.mode === 'local' && !localClient(ctx)) throw new MetricsRefused();
    if (access.mode === 'token') {
      const bearer = presentedKey(ctx.get('Authorization'), '');
      if (bearer === undefined || !sameToken(bearer, access.token)) throw new MetricsTokenRequired();
    }
    const { contentType, body } = await exposition();
    ctx.type = contentType;
    ctx.body = body;
  });

  return router;
}
