import bodyParser from 'koa-bodyparser';
import type { FileDownloadSettings } from '../fileDownloads.js';
import type { SearchTime } from '../searchTime.js';
import type { Middleware, ParameterizedContext } from 'koa';
import { requireRole } from '../../domain/access.js';
import { InvalidPath } from '../../domain/errors.js';
import type { TextExtractor } from '../../domain/files.js';
import type { Permission } from '../../domain/permissions.js';
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import type { Metrics } from '../../common/metrics.js';
import type { KeyStore } from '../../storage/keys/keyStore.js';
import type { OrgStore } from '../../storage/repo/orgStore.js';
import { UnsupportedMediaType } from '../httpErrors.js';
import type { AppState } from '../state.js';

export const API_PREFIX = '/api/v1/knowledge';

/** What route files may be given: each takes the part it uses. */
export interface RouteDeps {
  orgs: OrgStore;
  keys: KeyStore;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  /** The largest item content, in bytes. */
  maxContentBytes: number;
  /** The largest file upload, in bytes. */
  maxFileBytes: number;
  /** GET /files: the memory downloads may hold at once, and how long one may stall. */
  fileDownloads: FileDownloadSettings;
  /** Gets the text out of uploaded files (off the event loop). */
  extractor: TextExtractor;
  /** Each key's search time (GET /search and the MCP tool draw on it). */
  searchTime: SearchTime;
  /** Where the built dashboard lives. */
  dashboardDir?: string;
}

/**
 * The path after `prefix` as the client wrote it, URL-decoded exactly once (see README, Paths):
 * `%2F` becomes "/", and `%252F` becomes the literal "%2F" (then refused by the path rules).
 */
export function pathAfter(ctx: ParameterizedContext<AppState>, prefix: string): string {
  const raw = ctx.path.slice(prefix.length).replace(/^\//, '');
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidPath({ path: raw, rule: 'malformed percent-encoding' });
  }
}

/** Refuses a role that lacks the operation's permission before its body is even read. */
export function requirePermission(permission: Permission): Middleware<AppState> {
  return async (ctx, next) => {
    requireRole(ctx.state.actor, permission);
    await next();
  };
}

/**
 * 415 unless the body is declared JSON (the body parser ignores other types
 * silently), then a size-limited parse: over the limit is 413 before the body is read whole.
 */
export function jsonBody(limitBytes: number): Middleware<AppState> {
  const parse = bodyParser({
    enableTypes: ['json'],
    extendTypes: { json: ['application/json'] },
    jsonLimit: String(limitBytes),
    strict: true,
  });
  return async (ctx, next) => {
    if (!ctx.request.is('application/json')) throw new UnsupportedMediaType({ contentType: ctx.get('Content-Type') });
    await parse(ctx, next);
  };
}

/** Small admin bodies ({path, version}, {name, role}, folder rules). */
export const SMALL_BODY_BYTES = 64 * 1024;
