import Router from '@koa/router';
import { moveItem } from '../../domain/moves.js';
import { etagConditionField, formatEtag, itemEnvelope } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, requirePermission, SMALL_BODY_BYTES, type RouteDeps } from './common.js';

/** `POST /move {from, to, ifMatch?, message?}`: an item to another path, with its id and history. */
export function moveRoutes(deps: Pick<RouteDeps, 'clock'>): Router<AppState> {
  const router = new Router<AppState>();

  router.post(`${API_PREFIX}/move`, requirePermission('knowledge:write'), jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const body = validateBody.move(ctx.request.body);
    const ifMatch = etagConditionField(body.ifMatch, 'ifMatch');
    const { actor, repo } = ctx.state;
    const { item } = await moveItem({ repo, actor, from: body.from, to: body.to, ifMatch, message: body.message, clock: deps.clock });
    ctx.set('ETag', formatEtag(item.etag));
    ctx.body = itemEnvelope(actor.orgId, item);
  });

  return router;
}
