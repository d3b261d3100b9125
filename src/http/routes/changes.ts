import Router from '@koa/router';
import { changesSince } from '../../domain/changes.js';
import type { AppState } from '../state.js';
import { validateQuery } from '../validation.js';
import { API_PREFIX } from './common.js';

/** The change feed: what changed since a commit, as the calling role sees it (every role may ask). */
export function changeRoutes(): Router<AppState> {
  const router = new Router<AppState>();

  router.get(`${API_PREFIX}/changes`, async (ctx) => {
    const { since } = validateQuery.changes(ctx.query);
    const { actor, repo } = ctx.state;
    ctx.body = { success: true, data: await changesSince({ repo, actor, since }) };
  });

  return router;
}
