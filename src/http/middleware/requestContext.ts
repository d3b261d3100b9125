import { randomUUID } from 'node:crypto';
import type { Middleware, ParameterizedContext } from 'koa';
import type { AccessLine, Logger } from '../../common/log.js';
import { secondsSince } from '../../common/metrics.js';
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

/**
 * The route a request matched, as the router wrote it (`/api/v1/knowledge/items/*path`), never the raw path:
 * what logs group by and metrics label with, with no item path, id or key in it. Unmatched: `(none)`.
 */
function routeOf(ctx: ParameterizedContext<AppState>): string {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : '(none)';
}

/** What the access log and request metrics are told about each request once it is answered. */
export interface RequestRecord {
  method: string;
  route: string;
  status: number;
  seconds: number;
}

/** Where an answered request is told: the access log line and `observe` (metrics). */
export interface RequestNotes {
  logger: Logger;
  observe: (record: RequestRecord) => void;
}

/**
 * The access log line of one answered request (contract §12) and its metrics: the method, route pattern,
 * status, time, request id and key id (never the key). Koa's requests and the fast GET path (fastItemGet.ts) both end here.
 */
export function noteRequest(notes: RequestNotes, record: RequestRecord, requestId: string, keyId: string | null): void {
  notes.observe(record);
  const line: AccessLine = { requestId, method: record.method, route: record.route, status: record.status, ms: Math.round(record.seconds * 1e6) / 1e3, keyId };
  if (notes.logger.request) notes.logger.request(line);
  else notes.logger.info('request', { ...line });
}

/**
 * A request id on every response (a server fault is logged with it), safe defaults on every response, and the
 * access log line with its metrics (noteRequest) once the request is answered.
 */
export function requestContext(notes: RequestNotes): Middleware<AppState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.state.requestId = requestIdOf(ctx.get('X-Request-Id') || undefined);
    ctx.set(standardHeaders(ctx.state.requestId));
    try {
      await next();
    } finally {
      const record: RequestRecord = { method: ctx.method, route: routeOf(ctx), status: statusOf(ctx), seconds: secondsSince(started) };
      noteRequest(notes, record, ctx.state.requestId, (ctx.state as Partial<AppState>).actor?.keyId ?? null);
    }
  };
}

/**
 * The status the access line reports. Koa answers after this middleware returns, so a response already destroyed
 * here is one whose client closed the connection before anything was sent (a download that left while it waited for
 * memory, an upload cut off): nothing will be written, and the status Koa holds (its default 404, or the error an
 * aborted body led to) would describe an answer nobody got. 499, nginx's "client closed request", says what happened.
 */
function statusOf(ctx: { status: number; res: { destroyed: boolean; headersSent: boolean } }): number {
  return ctx.res.destroyed && !ctx.res.headersSent ? CLIENT_CLOSED_REQUEST : ctx.status;
}

/** Not an HTTP status anyone receives: the access log's and metrics' word for "the client left before the answer". */
const CLIENT_CLOSED_REQUEST = 499;
