import Router from '@koa/router';
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { OriginRefused } from '../httpErrors.js';
import type { RouteDeps } from '../routes/common.js';
import type { AppState } from '../state.js';
import { mcpExchange } from './exchange.js';

export const MCP_PATH = '/mcp';

/** JSON-RPC's code for a message that is JSON but not a request. */
const INVALID_REQUEST = -32600;

/**
 * `Origin`, when a browser sends it, must be this server's own or one the operator allowed: a page
 * of another site (or a DNS-rebound name) cannot drive an agent's tools with a key it got hold of.
 * Clients that are not browsers send no Origin.
 */
export function checkOrigin(allowed: readonly string[]): Middleware<AppState> {
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (origin && origin !== `${ctx.protocol}://${ctx.host}` && !allowed.includes(origin)) throw new OriginRefused({ origin });
    await next();
  };
}

/**
 * `POST /mcp`: the Model Context Protocol over Streamable HTTP, stateless. The key check, rate
 * limits, request id and error envelope ran before this (as for any API route); here the body is
 * read within the API's size limit and handed to the SDK's transport with a server bound to the
 * caller's key. JSON answers only (no SSE stream): every tool answers in one response.
 * GET (a server-to-client stream) and DELETE (ending a session) mean nothing without sessions: the
 * app's 405 answers them, with `Allow: POST`.
 */
export function mcpRoutes(deps: Pick<RouteDeps, 'maxContentBytes' | 'clock' | 'logger' | 'searchTime'> & { version: string }): Router<AppState> {
  const router = new Router<AppState>();
  // As for a PUT: the largest content plus room for the rest of the message and JSON escaping.
  const limit = deps.maxContentBytes + 64 * 1024;

  router.post(MCP_PATH, async (ctx) => {
    // raw-body refuses a declared or counted length over the limit with the error the table answers 413.
    const body = await getRawBody(ctx.req, { limit, encoding: 'utf8' });
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined; // the SDK answers it: a JSON-RPC parse error
    }
    if (Array.isArray(parsed) && parsed.length === 0) {
      // An empty batch asks for nothing; JSON-RPC calls it an invalid request (the SDK would answer 202 Accepted).
      ctx.status = 400;
      ctx.body = { jsonrpc: '2.0', error: { code: INVALID_REQUEST, message: 'Invalid Request: an empty batch' }, id: null };
      return;
    }
    const { actor, repo, requestId } = ctx.state;
    const answer = await mcpExchange({
      server: { actor, repo, maxContentBytes: deps.maxContentBytes, clock: deps.clock, searchTime: deps.searchTime, logger: deps.logger, requestId, version: deps.version },
      path: MCP_PATH,
      headers: ctx.req.headers,
      body,
      parsed,
    });
    for (const [name, value] of answer.headers) ctx.set(name, value);
    // An explicit null, then the status: a notification's 202 goes out with no body at all, as MCP requires
    // (left unset, Koa fills it with the status text "Accepted"; a null set after the status makes it 204).
    ctx.body = answer.text === '' ? null : answer.text;
    ctx.status = answer.status;
  });

  return router;
}
