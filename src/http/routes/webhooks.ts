import Router from '@koa/router';
import type { Webhooks } from '../../domain/webhooks.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, requirePermission, SMALL_BODY_BYTES } from './common.js';

/** Webhooks of the caller's organization, admins only; a hook's signing secret is shown once, at creation. */
export function webhookRoutes(deps: { webhooks: Webhooks }): Router<AppState> {
  const router = new Router<AppState>();
  const admin = requirePermission('knowledge:admin');
  const { webhooks } = deps;

  router.post(`${API_PREFIX}/webhooks`, admin, jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const input = validateBody.createWebhook(ctx.request.body);
    const { webhook, secret } = await webhooks.create({ repo: ctx.state.repo, actor: ctx.state.actor, input });
    ctx.body = { success: true, data: { webhook, secret } };
  });

  router.get(`${API_PREFIX}/webhooks`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    ctx.body = { success: true, data: { webhooks: await webhooks.list({ repo: ctx.state.repo, actor: ctx.state.actor }) } };
  });

  router.delete(`${API_PREFIX}/webhooks/:id`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    await webhooks.remove({ repo: ctx.state.repo, actor: ctx.state.actor, id: ctx.params.id ?? '' });
    ctx.body = { success: true, data: { message: 'Webhook deleted' } };
  });

  router.get(`${API_PREFIX}/webhooks/:id/deliveries`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    ctx.body = { success: true, data: { deliveries: await webhooks.deliveries({ repo: ctx.state.repo, actor: ctx.state.actor, id: ctx.params.id ?? '' }) } };
  });

  return router;
}
