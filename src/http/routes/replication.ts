import Router from '@koa/router';
import { replicationStatus } from '../../domain/replication.js';
import type { Replication } from '../../storage/replication/replication.js';
import type { AppState } from '../state.js';
import { validateQuery } from '../validation.js';
import { API_PREFIX, requirePermission } from './common.js';

export const REPLICATION_PATH = `${API_PREFIX}/replication`;

/** The caller's organization's git mirrors and how far behind they are (admins without scopes). */
export function replicationRoutes(deps: { replication?: Replication }): Router<AppState> {
  const router = new Router<AppState>();
  router.get(REPLICATION_PATH, requirePermission('knowledge:admin'), async (ctx) => {
    validateQuery.none(ctx.query);
    ctx.body = { success: true, data: { organizationId: ctx.state.repo.orgId, ...(await replicationStatus({ replication: deps.replication, repo: ctx.state.repo, actor: ctx.state.actor })) } };
  });
  return router;
}
