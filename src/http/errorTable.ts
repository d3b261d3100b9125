import { errnoCode, isKnowledgeError, type ErrorCode, type KnowledgeError } from '../common/errors.js';
import type { RateQuota } from './httpErrors.js';
import { rateLimitHeaders } from './middleware/rateLimit.js';

/**
 * The one place where errors become HTTP statuses and client messages: no
 * route or middleware sets a status for an error of ours. Messages clients
 * depend on are written out here character for character; others come from
 * the error itself.
 */
export interface ErrorResponse {
  status: number;
  message: string;
  headers?: Record<string, string>;
  /** Facts the envelope carries as `data` beside `error` (POST /commits: the failed operation's index). */
  data?: Record<string, unknown>;
  /** True for faults of ours (5xx): logged with the request id. */
  fault: boolean;
}

/** A row answers a client error unless it says `fault: true` (a fault of ours, logged as one). */
type Row = (err: KnowledgeError) => Omit<ErrorResponse, 'fault'> & { fault?: true };

/** What a client sees of a fault of ours: nothing of its inside (paths, object ids, file names). */
const INTERNAL = { status: 500, message: 'Internal server error', fault: true } as const;

/**
 * A body refused for its size is usually refused before it is read (its Content-Length says
 * enough): closing the connection spares reading, only to discard, what the client still sends,
 * beyond a short linger that lets the answer reach it (lingeringClose.ts).
 */
const CLOSE = { Connection: 'close' } as const;

const TABLE: Record<ErrorCode, Row> = {
  // The challenge tells an HTTP client (an MCP client among them) which scheme to answer with.
  UNAUTHORIZED: () => ({ status: 401, message: 'Invalid API key', headers: { 'WWW-Authenticate': 'Bearer realm="knowledge-store"' } }),
  GIT_AUTH_REQUIRED: () => ({
    status: 401,
    message: 'Invalid API key: use an admin API key as the password (http://x:<key>@host/git/<org>.git)',
    headers: { 'WWW-Authenticate': 'Basic realm="knowledge-store", charset="UTF-8"' },
  }),
  GIT_PUSH_REFUSED: () => ({ status: 403, message: 'Pushing is not allowed: the repository is read-only; write through the API' }),
  FORBIDDEN: (err) => ({ status: 403, message: err.message }),
  SCOPE_REFUSED: (err) => ({ status: 403, message: err.message }),
  ORIGIN_REFUSED: (err) => ({ status: 403, message: err.message }),
  METRICS_REFUSED: () => ({ status: 403, message: 'Forbidden — metrics are served to this machine only (KNOWLEDGE_METRICS)' }),
  METRICS_TOKEN_REQUIRED: () => ({ status: 401, message: 'Invalid metrics token', headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } }),
  // Not a fault: the probe's answer, which a balancer acts on.
  NOT_READY: (err) => ({ status: 503, message: err.message, headers: { 'Retry-After': '1' } }),
  ITEM_NOT_FOUND: () => ({ status: 404, message: 'Knowledge item not found' }),
  ROUTE_NOT_FOUND: () => ({ status: 404, message: 'Not found' }),
  METHOD_NOT_ALLOWED: (err) => {
    const allow = err.data.allow as readonly string[] | undefined;
    return { status: 405, message: 'Method not allowed', ...(allow ? { headers: { Allow: allow.join(', ') } } : {}) };
  },
  KEY_NOT_FOUND: () => ({ status: 404, message: 'API key not found' }),
  ORG_NOT_FOUND: () => ({ status: 404, message: 'Repository not found' }),
  VERSION_NOT_FOUND: () => ({ status: 404, message: 'Version not found' }),
  SEARCH_OFF: () => ({ status: 404, message: 'Search is turned off on this server (KNOWLEDGE_SEARCH=off)' }),
  ITEM_IN_TRASH: () => ({
    status: 409,
    message: 'A deleted item exists at this path — restore it first or use a different path',
  }),
  PATH_CONFLICT: (err) => ({ status: 409, message: err.message }),
  ITEM_KIND_CONFLICT: (err) => ({ status: 409, message: err.message }),
  UNSUPPORTED_FILE_TYPE: (err) => ({ status: 415, message: err.message }),
  EXTRACTION_FAILED: (err) => ({ status: 422, message: err.message }),
  ORG_EXISTS: (err) => ({ status: 409, message: err.message }),
  INVALID_PATH: (err) => ({ status: 400, message: err.message }),
  INVALID_INPUT: (err) => ({ status: 400, message: err.message }),
  PRECONDITION_FAILED: (err) => ({
    status: 412,
    message: err.data.reason === 'exists' ? 'Precondition failed: the item already exists' : 'Precondition failed: the item has changed',
  }),
  // Answered as the operation's own route would answer its refusal, plus which operation it was.
  OPERATION_FAILED: (err) => {
    // A cause that is a fault of ours stays one (logged as such by the envelope).
    const { fault, ...inner } = toErrorResponse(err.data.cause);
    return { ...inner, ...(fault ? { fault } : {}), data: { failedOperation: err.data.index } };
  },
  CONTENT_TOO_LARGE: () => ({ status: 413, message: 'Content too large', headers: CLOSE }),
  UNSUPPORTED_MEDIA_TYPE: () => ({ status: 415, message: 'Content-Type must be application/json' }),
  TOO_MANY_REQUESTS: (err) => {
    const quota = err.data.quota as RateQuota;
    return {
      status: 429,
      message: 'Too many requests',
      headers: { 'Retry-After': String(quota.retryAfterSeconds), ...rateLimitHeaders(quota) },
    };
  },
  // Each open event stream holds a connection and a listener: a key (and an organization) may hold only so many.
  TOO_MANY_STREAMS: (err) => ({
    status: 429,
    message: `Too many event streams: at most ${String(err.data.limit)} per ${String(err.data.scope)}; close one first`,
    headers: { 'Retry-After': '5' },
  }),
  // Only searches are refused: the key's reads and writes go on, under its request quota (whose RateLimit fields
  // the answer keeps). The quota here is milliseconds of search, which those fields would misname.
  // The message says when, for an MCP client, which sees no header.
  SEARCH_TIME_SPENT: (err) => {
    const wait = String((err.data.quota as RateQuota).retryAfterSeconds);
    return { status: 429, message: `Too much searching: this key has used its search time for now; try again in ${wait} s`, headers: { 'Retry-After': wait } };
  },
  WEBHOOK_NOT_FOUND: () => ({ status: 404, message: 'Webhook not found' }),
  LOCK_TIMEOUT: () => ({ status: 503, message: 'The store is busy; try again', headers: { 'Retry-After': '1' } }),
  REF_CONFLICT: () => ({ status: 503, message: 'The repository changed during the request; try again', headers: { 'Retry-After': '1' } }),
  // Refused at start or from the CLI, never in answer to a request; should one reach a client, it is ours.
  IMPORT_REFUSED: () => INTERNAL,
  DATA_DIR_IN_USE: () => INTERNAL,
  PORT_IN_USE: () => INTERNAL,
  CORRUPT_STORE: () => INTERNAL,
};

/** Errors thrown by Koa's own stack (body parsing, routing) carry a status and a `type`. */
interface HttpishError {
  status?: unknown;
  type?: unknown;
  expose?: unknown;
}

/** The client stopped sending its body (or closed the connection before it was read). */
export const BODY_INCOMPLETE: ErrorResponse = { status: 400, message: 'Request body incomplete', fault: false };

export function toErrorResponse(err: unknown): ErrorResponse {
  if (isKnowledgeError(err)) {
    const row = TABLE[err.code];
    // A KnowledgeError built outside the type checker (a test, a cast) may carry a code the table lacks.
    if (row) return { fault: false, ...row(err) };
  }
  const system = errnoCode(err);
  if (system === 'ENOSPC' || system === 'EDQUOT') return { status: 507, message: 'Insufficient storage', fault: true };
  // A body whose Content-Encoding does not decode (zlib's Z_DATA_ERROR, Z_BUF_ERROR, brotli's errors) is the client's.
  if (system?.startsWith('Z_') || system?.startsWith('ERR__ERROR_FORMAT') || system === 'ERR_BROTLI_DECOMPRESSION_FAILED') {
    return { status: 400, message: 'Request body does not decode with its Content-Encoding', fault: false };
  }
  const { status, type, expose } = (typeof err === 'object' && err !== null ? err : {}) as HttpishError;
  if (typeof status === 'number' && status >= 400 && status < 500 && expose !== false) {
    switch (type) {
      case 'entity.too.large':
        return { status: 413, message: 'Content too large', headers: CLOSE, fault: false };
      case 'entity.parse.failed':
      case undefined:
        if (status === 400) return { status, message: 'Malformed JSON body', fault: false };
        if (status === 415) return { status, message: 'Unsupported Content-Encoding', fault: false };
        break;
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return { status: 415, message: 'Unsupported body encoding', fault: false };
      case 'request.aborted':
      case 'request.size.invalid':
        return BODY_INCOMPLETE;
    }
    return { status, message: 'Bad request', fault: false };
  }
  return { ...INTERNAL };
}
