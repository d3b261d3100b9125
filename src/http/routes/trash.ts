import Router from '@koa/router';
import { listTrash, purgeItem, restoreItem } from '../../domain/trash.js';
import { itemEnvelope, presentTrashItem } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, pathAfter, requirePermission, SMALL_BODY_BYTES, type RouteDeps } from './common.js';

const TRASH_ITEMS_PREFIX = `${API_PREFIX}/trash/items`;

/** The trash, admins only: list, restore, purge. */
export function trashRoutes(deps: Pick<RouteDeps, 'clock'>): Router<AppState> {
  const router = new Router<AppState>();
  const admin = requirePermission('knowledge:admin');

  router.get(`${API_PREFIX}/trash`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    const items = await listTrash({ repo, actor });
    ctx.body = { success: true, data: { items: items.map((i) => presentTrashItem(actor.orgId, i)) } };
  });

  router.post(`${API_PREFIX}/trash/restore`, admin, jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const { path } = validateBody.path(ctx.request.body);
    const { actor, repo } = ctx.state;
    const item = await restoreItem({ repo, actor, path, clock: deps.clock });
    ctx.body = itemEnvelope(actor.orgId, item);
  });

  router.delete(`${TRASH_ITEMS_PREFIX}{/*path}`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    await purgeItem({ repo, actor, path: pathAfter(ctx, TRASH_ITEMS_PREFIX), clock: deps.clock });
    ctx.body = { success: true, data: { message: 'Knowledge item purged' } };
  });

  return router;
}
