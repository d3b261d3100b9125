import Router from '@koa/router';
import { prepareSearch } from '../../domain/search.js';
import { presentSearchResult } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateQuery } from '../validation.js';
import { API_PREFIX, type RouteDeps } from './common.js';

/**
 * Full-text search over paths and contents, as the calling role may read them (every role may ask), within the
 * key's search time.
 */
export function searchRoutes(deps: Pick<RouteDeps, 'searchTime'>): Router<AppState> {
  const router = new Router<AppState>();

  router.get(`${API_PREFIX}/search`, async (ctx) => {
    const query = validateQuery.search(ctx.query);
    const { actor, repo } = ctx.state;
    // Checked before the key's search time is asked: a bad query is its 400, whatever time the key has left.
    const search = prepareSearch({ repo, actor, ...query });
    const { results, nextCursor } = await deps.searchTime.spend(actor.keyId, search);
    ctx.body = { success: true, data: { results: results.map((r) => presentSearchResult(actor.orgId, r)), nextCursor } };
  });

  return router;
}
