import Router from '@koa/router';
import { getFolderRule, listFolderRules, setFolderRule } from '../../domain/folders.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, pathAfter, requirePermission, SMALL_BODY_BYTES, type RouteDeps } from './common.js';

const FOLDERS_PREFIX = `${API_PREFIX}/folders`;

/** Folder rules, admins only: what `inherit` resolves to under a folder. */
export function folderRoutes(deps: Pick<RouteDeps, 'clock'>): Router<AppState> {
  const router = new Router<AppState>();
  const admin = requirePermission('knowledge:admin');

  router.get(FOLDERS_PREFIX, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    ctx.body = { success: true, data: { folders: listFolderRules({ repo, actor }) } };
  });

  router.get(`${FOLDERS_PREFIX}/*folder`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    ctx.body = { success: true, data: { folder: getFolderRule({ repo, actor, folder: pathAfter(ctx, FOLDERS_PREFIX) }) } };
  });

  router.put(`${FOLDERS_PREFIX}/*folder`, admin, jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const rule = validateBody.folderRule(ctx.request.body);
    const { actor, repo } = ctx.state;
    const folder = await setFolderRule({ repo, actor, folder: pathAfter(ctx, FOLDERS_PREFIX), ...rule, clock: deps.clock });
    ctx.body = { success: true, data: { folder } };
  });

  return router;
}
