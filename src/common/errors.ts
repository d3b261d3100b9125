/**
 * Every code an error of ours may carry. One union, so that the HTTP error table
 * (`src/http/errorTable.ts`) is checked by the compiler to answer each of them:
 * a new code without a row there does not build.
 */
export type ErrorCode =
  // The item and path rules (domain)
  | 'ITEM_NOT_FOUND'
  | 'ITEM_IN_TRASH'
  | 'PATH_CONFLICT'
  | 'INVALID_PATH'
  | 'FORBIDDEN'
  | 'SCOPE_REFUSED'
  | 'PRECONDITION_FAILED'
  | 'CONTENT_TOO_LARGE'
  | 'INVALID_INPUT'
  | 'ORG_NOT_FOUND'
  | 'ORG_EXISTS'
  | 'KEY_NOT_FOUND'
  | 'VERSION_NOT_FOUND'
  | 'IMPORT_REFUSED'
  | 'SEARCH_OFF'
  | 'OPERATION_FAILED'
  | 'ITEM_KIND_CONFLICT'
  | 'UNSUPPORTED_FILE_TYPE'
  | 'EXTRACTION_FAILED'
  | 'WEBHOOK_NOT_FOUND'
  // The HTTP edge
  | 'UNAUTHORIZED'
  | 'ROUTE_NOT_FOUND'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'METHOD_NOT_ALLOWED'
  | 'GIT_AUTH_REQUIRED'
  | 'GIT_PUSH_REFUSED'
  | 'TOO_MANY_REQUESTS'
  | 'TOO_MANY_STREAMS'
  | 'SEARCH_TIME_SPENT'
  | 'ORIGIN_REFUSED'
  | 'METRICS_REFUSED'
  | 'METRICS_TOKEN_REQUIRED'
  | 'NOT_READY'
  | 'PORT_IN_USE'
  // Storage
  | 'LOCK_TIMEOUT'
  | 'REF_CONFLICT'
  | 'DATA_DIR_IN_USE'
  | 'CORRUPT_STORE';

/**
 * Errors carry a `code` and structured `data`, never an HTTP status
 * (the isomorphic-git style). `src/http/errorTable.ts` is the one place that
 * turns a code into a status and a client-facing message.
 */
export class KnowledgeError<D extends object = Record<string, unknown>> extends Error {
  readonly code: ErrorCode;
  readonly data: D;
  constructor(code: ErrorCode, message: string, data: D) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data;
  }
}

export function isKnowledgeError(err: unknown): err is KnowledgeError {
  return err instanceof KnowledgeError;
}

/** Node's system errors (ENOENT, EEXIST, ENOSPC...) carry a string code. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
