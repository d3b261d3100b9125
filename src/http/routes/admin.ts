import Router from '@koa/router';
import { changesSince } from '../../domain/changes.js';
import { getFolderRule, listFolderRules, setFolderRule } from '../../domain/folders.js';
import { createKey, listKeys, revokeKey } from '../../domain/keys.js';
import { listTrash, purgeItem, restoreItem } from '../../domain/trash.js';
import type { KeyStore } from '../../storage/keys/keyStore.js';
import { presentItem, presentKey, presentTrashItem } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, pathAfter, requirePermission, SMALL_BODY_BYTES } from './common.js';

const TRASH_ITEMS_PREFIX = `${API_PREFIX}/trash/items`;
const FOLDERS_PREFIX = `${API_PREFIX}/folders`;

/** Trash, folder rules, the change feed and key management (contract §4). */
export function adminRoutes(deps: { keys: KeyStore }): Router<AppState> {
  const router = new Router<AppState>();
  const admin = requirePermission('knowledge:admin');
  const body = jsonBody(SMALL_BODY_BYTES);

  router.get(`${API_PREFIX}/trash`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    const items = await listTrash({ repo, actor });
    ctx.body = { success: true, data: { items: items.map((i) => presentTrashItem(actor.orgId, i)) } };
  });

  router.post(`${API_PREFIX}/trash/restore`, admin, body, async (ctx) => {
    validateQuery.none(ctx.query);
    const { path } = validateBody.path(ctx.request.body);
    const { actor, repo } = ctx.state;
    const item = await restoreItem({ repo, actor, path });
    ctx.body = { success: true, data: { item: presentItem(actor.orgId, item) } };
  });

  router.delete(`${TRASH_ITEMS_PREFIX}{/*path}`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    await purgeItem({ repo, actor, path: pathAfter(ctx, TRASH_ITEMS_PREFIX) });
    ctx.body = { success: true, data: { message: 'Knowledge item purged' } };
  });

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

  router.put(`${FOLDERS_PREFIX}/*folder`, admin, body, async (ctx) => {
    validateQuery.none(ctx.query);
    const rule = validateBody.folderRule(ctx.request.body);
    const { actor, repo } = ctx.state;
    const folder = await setFolderRule({ repo, actor, folder: pathAfter(ctx, FOLDERS_PREFIX), ...rule });
    ctx.body = { success: true, data: { folder } };
  });

  router.get(`${API_PREFIX}/changes`, async (ctx) => {
    const { since } = validateQuery.changes(ctx.query);
    const { actor, repo } = ctx.state;
    ctx.body = { success: true, data: await changesSince({ repo, actor, since }) };
  });

  router.get(`${API_PREFIX}/keys`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const keys = await listKeys({ keys: deps.keys, orgId: ctx.state.actor.orgId });
    ctx.body = { success: true, data: { keys: keys.map(presentKey) } };
  });

  router.post(`${API_PREFIX}/keys`, admin, body, async (ctx) => {
    validateQuery.none(ctx.query);
    const { name, role } = validateBody.createKey(ctx.request.body);
    const { key, secret } = await createKey({ keys: deps.keys, orgId: ctx.state.actor.orgId, role, name });
    ctx.body = { success: true, data: { key: presentKey(key), secret } };
  });

  router.delete(`${API_PREFIX}/keys/:keyId`, admin, async (ctx) => {
    validateQuery.none(ctx.query);
    const revoked = await revokeKey({ keys: deps.keys, keyId: ctx.params.keyId ?? '', orgId: ctx.state.actor.orgId });
    ctx.body = { success: true, data: { key: presentKey(revoked) } };
  });

  return router;
}
