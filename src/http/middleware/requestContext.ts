import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../common/log.js';
import { standardHeaders } from '../headers.js';
import type { AppState } from '../state.js';

/**
 * What an incoming X-Request-Id may be to be kept (contract §12): 1–128 of
 * `A-Za-z0-9-_.:`, enough for a UUID, a trace id or a proxy's `host:counter`,
 * and nothing that could split a header or a log line.
 */
const REQUEST_ID = /^[A-Za-z0-9\-_.:]{1,128}$/;

/** The caller's request id when it is well formed (a proxy or client correlates its logs with ours), else a new UUID. */
export function requestIdOf(incoming: string | undefined): string {
  return incoming !== undefined && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** A request id on every response (a server fault is logged with it), safe defaults on every response, and a debug access log. */
export function requestContext(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.state.requestId = requestIdOf(ctx.get('X-Request-Id') || undefined);
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
