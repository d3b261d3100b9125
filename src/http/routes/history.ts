import Router from '@koa/router';
import { diffVersions, getHistory, rollback } from '../../domain/history.js';
import { itemEnvelope } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, pathAfter, requirePermission, SMALL_BODY_BYTES, type RouteDeps } from './common.js';

const HISTORY_PREFIX = `${API_PREFIX}/history`;
const DIFF_PREFIX = `${API_PREFIX}/diff`;

/** History, diff and rollback: every version reachable, history never rewritten. */
export function historyRoutes(options: Pick<RouteDeps, 'maxContentBytes' | 'clock'>): Router<AppState> {
  const router = new Router<AppState>();

  router.get(`${HISTORY_PREFIX}{/*path}`, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    ctx.body = { success: true, data: { versions: getHistory({ repo, actor, path: pathAfter(ctx, HISTORY_PREFIX) }) } };
  });

  router.get(`${DIFF_PREFIX}{/*path}`, async (ctx) => {
    const { from, to } = validateQuery.diff(ctx.query);
    const { actor, repo } = ctx.state;
    const diff = await diffVersions({ repo, actor, path: pathAfter(ctx, DIFF_PREFIX), from, to });
    ctx.body = { success: true, data: { from, to, diff } };
  });

  router.post(`${API_PREFIX}/rollback`, requirePermission('knowledge:write'), jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const { path, version } = validateBody.rollback(ctx.request.body);
    const { actor, repo } = ctx.state;
    const { item } = await rollback({ repo, actor, path, version, maxContentBytes: options.maxContentBytes, clock: options.clock });
    ctx.body = itemEnvelope(actor.orgId, item);
  });

  return router;
}
