import Router from '@koa/router';
import type { Middleware } from 'koa';
import { createKey, listKeys, revokeKey } from '../../domain/keys.js';
import { requireUnscoped } from '../../domain/scopes.js';
import { presentKey } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, requirePermission, SMALL_BODY_BYTES, type RouteDeps } from './common.js';

/** API keys of the caller's organization, admins only; a secret is shown once, at creation. */
export function keyRoutes(deps: Pick<RouteDeps, 'keys' | 'clock'>): Router<AppState> {
  const router = new Router<AppState>();
  const role = requirePermission('knowledge:admin');
  // Keys reach the whole organization: a scoped admin could otherwise make itself a key without scopes.
  const unscoped: Middleware<AppState> = async (ctx, next) => {
    requireUnscoped(ctx.state.actor, 'manage keys');
    await next();
  };
  const admin = [role, unscoped];

  router.get(`${API_PREFIX}/keys`, ...admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const keys = await listKeys({ keys: deps.keys, orgId: ctx.state.actor.orgId });
    ctx.body = { success: true, data: { keys: keys.map(presentKey) } };
  });

  router.post(`${API_PREFIX}/keys`, ...admin, jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const { name, role, scopes } = validateBody.createKey(ctx.request.body);
    const { key, secret } = await createKey({ keys: deps.keys, orgId: ctx.state.actor.orgId, role, name, scopes, clock: deps.clock });
    ctx.body = { success: true, data: { key: presentKey(key), secret } };
  });

  router.delete(`${API_PREFIX}/keys/:keyId`, ...admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const revoked = await revokeKey({ keys: deps.keys, keyId: ctx.params.keyId ?? '', orgId: ctx.state.actor.orgId, clock: deps.clock });
    ctx.body = { success: true, data: { key: presentKey(revoked) } };
  });

  return router;
}
