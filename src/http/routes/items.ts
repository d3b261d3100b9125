import { Readable } from 'node:stream';
import Router from '@koa/router';
import { InvalidInput } from '../../domain/errors.js';
import { getItemAtRef, getItemVersion } from '../../domain/history.js';
import { deleteItem, putItem } from '../../domain/items.js';
import { getItem, itemViews, selectItems } from '../../domain/itemReads.js';
import { API_PREFIX, jsonBody, pathAfter, requirePermission, type RouteDeps } from './common.js';
import { formatEtag, itemEnvelope, itemListBody, parseEtagCondition } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';

export const ITEMS_PREFIX = `${API_PREFIX}/items`;
/** The item route as the router writes it (what logs and metrics name it by). */
export const ITEM_ROUTE = `${ITEMS_PREFIX}{/*path}`;

export function itemRoutes(options: Pick<RouteDeps, 'maxContentBytes' | 'logger' | 'clock'>): Router<AppState> {
  const router = new Router<AppState>();
  // The content limit plus room for the other fields and JSON escaping; a larger body is 413 before it is read whole.
  const parseJson = jsonBody(options.maxContentBytes + 64 * 1024);

  router.get(API_PREFIX, async (ctx) => {
    const query = validateQuery.list(ctx.query);
    const { actor, repo } = ctx.state;
    const { entries, nextCursor } = selectItems({ repo, actor, prefix: query.prefix, limit: query.limit, cursor: query.cursor });
    const views = itemViews({ repo, entries, withContent: query.content !== 'false' });
    // The first read comes before the answer starts: a store that cannot be read at all is a 500
    // envelope, not a 200 cut short. A later failure can only cut the body short (the client sees
    // a broken response, never a wrong one) and is logged here.
    const first = await views.next();
    const items = (async function* () {
      if (first.done) return;
      yield first.value;
      yield* views;
    })();
    const { logger } = options;
    const requestId = ctx.state.requestId;
    const pieces = (async function* () {
      try {
        yield* itemListBody({ orgId: actor.orgId, items, nextCursor });
      } catch (err) {
        logger.error('list failed while streaming', { requestId, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
        throw err;
      }
    })();
    // Streamed: a list of 10,000 large items is never held in memory whole; the client's pace sets the reads.
    ctx.type = 'json';
    ctx.body = Readable.from(pieces, { objectMode: false });
  });

  const itemRoute = ITEM_ROUTE;

  router.get(itemRoute, async (ctx) => {
    const { version, ref } = validateQuery.getItem(ctx.query);
    if (version !== undefined && ref !== undefined) throw new InvalidInput({ reason: 'Use either version or ref, not both' });
    const { actor, repo } = ctx.state;
    const path = pathAfter(ctx, ITEMS_PREFIX);
    const item =
      version !== undefined
        ? await getItemVersion({ repo, actor, path, version })
        : ref !== undefined
          ? await getItemAtRef({ repo, actor, path, ref })
          : await getItem({ repo, actor, path });
    ctx.set('ETag', formatEtag(item.etag));
    const condition = parseEtagCondition(ctx.get('If-None-Match'));
    if (condition !== undefined && (condition === '*' || condition.includes(item.etag))) {
      ctx.status = 304;
      return;
    }
    ctx.body = itemEnvelope(actor.orgId, item);
  });

  router.put(itemRoute, requirePermission('knowledge:write'), parseJson, async (ctx) => {
    validateQuery.none(ctx.query);
    const path = pathAfter(ctx, ITEMS_PREFIX);
    const body = validateBody.putItem(ctx.request.body);
    const { actor, repo } = ctx.state;
    const { item } = await putItem({
      repo,
      actor,
      path,
      content: body.content,
      message: body.message,
      requiredReadPermission: body.requiredReadPermission,
      requiredWritePermission: body.requiredWritePermission,
      ifMatch: parseEtagCondition(ctx.get('If-Match')),
      ifNoneMatch: parseEtagCondition(ctx.get('If-None-Match')),
      maxContentBytes: options.maxContentBytes,
      clock: options.clock,
    });
    ctx.set('ETag', formatEtag(item.etag));
    ctx.body = itemEnvelope(actor.orgId, item);
  });

  router.delete(itemRoute, requirePermission('knowledge:admin'), async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    await deleteItem({ repo, actor, path: pathAfter(ctx, ITEMS_PREFIX), clock: options.clock });
    ctx.body = { success: true, data: { message: 'Knowledge item deleted' } };
  });

  return router;
}
