import Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import type { Middleware, ParameterizedContext } from 'koa';
import { InvalidPath } from '../../domain/errors.js';
import { deleteItem, getItem, listItems, putItem, requireRole } from '../../domain/items.js';
import type { Permission } from '../../domain/permissions.js';
import { UnsupportedMediaType } from '../httpErrors.js';
import { formatEtag, parseEtagCondition, presentItem } from '../presenters.js';
import type { AppState } from '../state.js';
import { validateBody, validateQuery } from '../validation.js';

export const API_PREFIX = '/api/v1/knowledge';
const ITEMS_PREFIX = `${API_PREFIX}/items`;

/**
 * The item path as the client wrote it, URL-decoded exactly once (contract §3):
 * `%2F` becomes "/", and `%252F` becomes the literal "%2F" (then refused by the path rules).
 */
function itemPath(ctx: ParameterizedContext<AppState>): string {
  const raw = ctx.path.slice(ITEMS_PREFIX.length).replace(/^\//, '');
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidPath({ path: raw, rule: 'malformed percent-encoding' });
  }
}

/** Refuses a role that lacks the operation's permission before its body is even read. */
function requirePermission(permission: Permission): Middleware<AppState> {
  return async (ctx, next) => {
    requireRole(ctx.state.actor, permission);
    await next();
  };
}

/** 415 unless the body is declared JSON; the body parser ignores other types silently. */
const requireJson: Middleware<AppState> = async (ctx, next) => {
  if (!ctx.request.is('application/json')) throw new UnsupportedMediaType({ contentType: ctx.get('Content-Type') });
  await next();
};

export function itemRoutes(options: { maxContentBytes: number }): Router<AppState> {
  const router = new Router<AppState>();
  const parseJson = bodyParser({
    enableTypes: ['json'],
    extendTypes: { json: ['application/json'] },
    // The content limit plus room for the other fields and JSON escaping (contract §6).
    jsonLimit: String(options.maxContentBytes + 64 * 1024),
    strict: true,
  });

  router.get(API_PREFIX, async (ctx) => {
    const query = validateQuery.list(ctx.query);
    const { actor, repo } = ctx.state;
    const { items, nextCursor } = await listItems({
      repo,
      actor,
      prefix: query.prefix,
      limit: query.limit,
      cursor: query.cursor,
      withContent: query.content !== 'false',
    });
    const data: Record<string, unknown> = { items: items.map((i) => presentItem(actor.orgId, i)) };
    if (nextCursor !== undefined) data.nextCursor = nextCursor;
    ctx.body = { success: true, data };
  });

  const itemRoute = `${ITEMS_PREFIX}{/*path}`;

  router.get(itemRoute, async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    const item = await getItem({ repo, actor, path: itemPath(ctx) });
    ctx.set('ETag', formatEtag(item.etag));
    const condition = parseEtagCondition(ctx.get('If-None-Match'));
    if (condition !== undefined && (condition === '*' || condition.includes(item.etag))) {
      ctx.status = 304;
      return;
    }
    ctx.body = { success: true, data: { item: presentItem(actor.orgId, item) } };
  });

  router.put(itemRoute, requirePermission('knowledge:write'), requireJson, parseJson, async (ctx) => {
    validateQuery.none(ctx.query);
    const path = itemPath(ctx);
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
    });
    ctx.set('ETag', formatEtag(item.etag));
    ctx.body = { success: true, data: { item: presentItem(actor.orgId, item) } };
  });

  router.delete(itemRoute, requirePermission('knowledge:admin'), async (ctx) => {
    validateQuery.none(ctx.query);
    const { actor, repo } = ctx.state;
    await deleteItem({ repo, actor, path: itemPath(ctx) });
    ctx.body = { success: true, data: { message: 'Knowledge item deleted' } };
  });

  return router;
}
