import type { Middleware } from 'koa';
import type { Logger } from '../../common/log.js';
import { BODY_INCOMPLETE, toErrorResponse } from '../errorTable.js';
import { RouteNotFound } from '../httpErrors.js';
import { closeInStages } from '../lingeringClose.js';
import { MCP_PATH } from '../mcp/endpoint.js';
import type { AppState } from '../state.js';

/** JSON-RPC's "server error" code, for a request refused by HTTP before the MCP server saw it. */
const JSON_RPC_SERVER_ERROR = -32000;

/**
 * Every API response is a JSON envelope with `success`; every failure is
 * `{ success: false, error }` with a status from the error table. Under `/git/`
 * the client is git, which shows a text/plain error body to its user. A fault of
 * ours is logged with the request id, and the client sees no stack or path.
 */
export function errorEnvelope(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) throw new RouteNotFound({ method: ctx.method, path: ctx.path });
    } catch (err) {
      // A client that closed its connection before its body was read leaves raw-body an unreadable
      // stream (a 500 "stream.not.readable"): the client's doing, not a fault to log.
      const clientGone = ctx.req.destroyed && (err as { type?: unknown } | null)?.type === 'stream.not.readable';
      const response = clientGone ? BODY_INCOMPLETE : toErrorResponse(err);
      if (response.fault) {
        logger.error('request failed', {
          requestId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        });
      }
      ctx.status = response.status;
      for (const [name, value] of Object.entries(response.headers ?? {})) ctx.set(name, value);
      // A body refused before it was read whole: the answer must reach the client before the connection goes.
      if (response.headers?.Connection === 'close') closeInStages(ctx.req);
      if (ctx.path === MCP_PATH) {
        // An MCP client reads a JSON-RPC error; the request's own id is not known before its body is read.
        ctx.body = { jsonrpc: '2.0', error: { code: JSON_RPC_SERVER_ERROR, message: response.message }, id: null };
      } else if (ctx.path.startsWith('/git/')) {
        // git prints a text/plain error body to the user ("remote: ..."); JSON it would hide.
        ctx.type = 'text/plain';
        ctx.body = `${response.message}\n`;
      } else {
        ctx.body = { success: false, error: response.message, ...(response.data ? { data: response.data } : {}) };
      }
    }
  };
}
