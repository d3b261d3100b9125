import type { ErrorCode } from '../../common/errors.js';

export type Schema = Record<string, unknown>;

/**
 * One route as the API description tells it. The route files register `route` with Koa; the
 * description (src/http/openapi/document.ts) turns it into an OpenAPI operation, with `query` and
 * `body` being the very ajv schemas validation.ts checks requests with, and the failures made from
 * the error table's rows for `errors`. A test (test/http/openapi.test.ts) fails when the router has
 * a route that no OperationSpec names.
 */
export interface OperationSpec {
  method: 'get' | 'put' | 'post' | 'delete';
  /** The route answers every method alike (Koa's `router.all`); described under `method`. */
  anyMethod?: true;
  /** The path pattern exactly as the route file gives it to Koa (`/api/v1/knowledge/items{/*path}`). */
  route: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Who may call: an API key (Bearer or X-API-Key), nobody needs one, git's HTTP Basic, the metrics setting. */
  auth: 'key' | 'none' | 'git' | 'metrics';
  /** The permission the route requires of the key's role, told in the description. */
  permission?: 'knowledge:read' | 'knowledge:write' | 'knowledge:admin';
  query?: Schema;
  body?: Schema;
  /** A body that is not JSON (a file's bytes): the media types taken. */
  rawBody?: { media: readonly string[]; description: string };
  /** Request headers the route reads (If-Match...), described as parameters. */
  headers?: Record<string, string>;
  /** The success answer: a JSON schema, or another media type's description. */
  success: { status: number; description: string; json?: Schema; media?: string; headers?: readonly string[] };
  /** Other non-failure answers (304, 302, MCP's 202). */
  extra?: Record<number, { description: string; json?: Schema; media?: string }>;
  /** Codes of ours this route may answer with (the error table gives their statuses and messages). */
  errors: readonly ErrorCode[];
  /** The route writes: it may also answer 503 (busy) and 507 (disk full). */
  writes?: boolean;
  /** Failures are not the JSON envelope: git's plain text, MCP's JSON-RPC. */
  failureMedia?: 'text' | 'json-rpc';
}

/** Failures every keyed route may give: no key, a spent quota. */
export const KEY_ERRORS: readonly ErrorCode[] = ['UNAUTHORIZED', 'TOO_MANY_REQUESTS'];
/** Failures of every route with a JSON body (over the limit, not JSON, malformed, a bad field). */
export const BODY_ERRORS: readonly ErrorCode[] = ['CONTENT_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'INVALID_INPUT'];
/** Failures of a write: the store busy, the ref moved under it. */
export const WRITE_ERRORS: readonly ErrorCode[] = ['LOCK_TIMEOUT', 'REF_CONFLICT'];
