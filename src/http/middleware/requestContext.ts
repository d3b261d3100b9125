import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../common/log.js';
import { standardHeaders } from '../headers.js';
import type { AppState } from '../state.js';

/** A request id on every response (a server fault is logged with it), safe defaults on every response, and a debug access log. */
export function requestContext(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.state.requestId = randomUUID();
    ctx.set(standardHeaders(ctx.state.requestId));
    try {
      await next();
    } finally {
      logger.debug('request', {
        requestId: ctx.state.requestId,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
      });
    }
  };
}
