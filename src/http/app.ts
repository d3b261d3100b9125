import type { RequestListener } from 'node:http';
import Koa from 'koa';
import { systemClock, type Clock } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import { silentMetrics, type Metrics, type MetricsAccess } from '../common/metrics.js';
import type { TextExtractor } from '../domain/files.js';
import type { KeyStore } from '../storage/keys/keyStore.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { requireApiKey } from './middleware/auth.js';
import { compression } from './middleware/compression.js';
import { errorEnvelope } from './middleware/errors.js';
import { MethodNotAllowed } from './httpErrors.js';
import { limitFailedAuthentication, limitPerKey, perKeyBuckets, type TokenBuckets } from './middleware/rateLimit.js';
import { withFastItemGet } from './fastItemGet.js';
import type { ItemAnswers } from './itemAnswers.js';
import { requestContext, type RequestNotes } from './middleware/requestContext.js';
import { checkOrigin, MCP_PATH, mcpRoutes } from './mcp/endpoint.js';
import { EventFeed } from '../domain/events.js';
import { SecretHashes } from '../domain/keys.js';
import { EventStreams, type EventStreamSettings } from './events/streamLimits.js';
import { LocalStreamHost } from './events/streamHost.js';
import { OPENAPI_PATH } from './openapi/serviceOperations.js';
import { apiDocsRoutes } from './routes/apiDocs.js';
import { changeRoutes } from './routes/changes.js';
import { eventRoutes, type EventDeps } from './routes/events.js';
import { webhookRoutes } from './routes/webhooks.js';
import { replicationRoutes } from './routes/replication.js';
import type { Replication } from '../storage/replication/replication.js';
import type { Webhooks } from '../domain/webhooks.js';
import { searchRoutes } from './routes/search.js';
import type { RouteDeps } from './routes/common.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { fileRoutes } from './routes/files.js';
import { folderRoutes } from './routes/folders.js';
import { gitRoutes } from './routes/git.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes, type MetricsExposition } from './routes/metrics.js';
import { historyRoutes } from './routes/history.js';
import { itemRoutes } from './routes/items.js';
import { keyRoutes } from './routes/keys.js';
import { commitRoutes } from './routes/commits.js';
import { moveRoutes } from './routes/moves.js';
import { revertRoutes } from './routes/revert.js';
import { trashRoutes } from './routes/trash.js';
import { SearchTime } from './searchTime.js';
import type { AppState } from './state.js';
import type { FileDownloadSettings } from './fileDownloads.js';

/** The settings the HTTP layer reads (the server's Config has them, among others). */
export interface HttpSettings {
  maxContentBytes: number;
  /** The largest file upload (contract §8). */
  maxFileBytes: number;
  /** GET /files: the memory downloads may hold at once, and how long one may stall. */
  fileDownloads: FileDownloadSettings;
  rateLimitPerKey: number;
  rateLimitPerKeyBurst: number;
  rateLimitAuthFailures: number;
  rateLimitAuthFailuresBurst: number;
  /** Milliseconds of search per key per minute (0: no limit), and at once. */
  searchMsPerKey: number;
  searchMsPerKeyBurst: number;
  /** Browser origins, besides the server's own, that may call the MCP endpoint. */
  allowedOrigins: readonly string[];
  /** Reverse proxies in front (0: none): the client address comes from X-Forwarded-For when set. */
  trustProxy: number;
  /** Who may read GET /metrics. */
  metrics: MetricsAccess;
  /** GET /events: streams per key and organization, heartbeat, slow readers. */
  eventStreams: EventStreamSettings;
}

export interface AppDeps {
  config: HttpSettings;
  orgs: OrgStore;
  keys: KeyStore;
  logger: Logger;
  /** Told every answered request, and what the search route does (silent unless given). */
  metrics?: Metrics;
  /** Renders GET /metrics (no route without it). */
  metricsExposition?: MetricsExposition;
  /** Where "now" comes from (the system clock unless given). */
  clock?: Clock;
  /** Where the built dashboard lives (dist/dashboard of this package unless given). */
  dashboardDir?: string;
  /** The version the MCP server reports (this package's, read by app/). */
  version: string;
  /** Gets the text out of uploaded files (app/ runs it in worker threads). */
  extractor: TextExtractor;
  /** The event feed and the open streams (app/ shares the feed with webhooks, and ends the streams at stop); made here unless given. */
  events?: EventDeps;
  /** The webhooks service (no /webhooks routes without it). */
  webhooks?: Webhooks;
  /** Pushes to git mirrors (GET /replication lists none without it). */
  replication?: Replication;
  /** The item answers the fast GET path keeps ready (ItemAnswers' default bytes unless given). */
  answers?: ItemAnswers;
}

/** What Koa's middleware and the fast GET path share: the per-key quota, where answered requests are told, the hashes of keys seen. */
export interface SharedParts {
  perKey: TokenBuckets | undefined;
  notes: RequestNotes;
  hashes: SecretHashes;
}

export function sharedParts(deps: AppDeps): SharedParts {
  const metrics = deps.metrics ?? silentMetrics;
  return {
    perKey: perKeyBuckets({ perMinute: deps.config.rateLimitPerKey, burst: deps.config.rateLimitPerKeyBurst }),
    notes: { logger: deps.logger, observe: (r) => metrics.request(r) },
    hashes: new SecretHashes(),
  };
}

/**
 * What the server serves: successful reads of an item by the fast GET path (fastItemGet.ts), everything
 * else by the Koa application. Both spend the same per-key quota and write the same access log and metrics.
 */
export function createHandler(deps: AppDeps): RequestListener {
  const shared = sharedParts(deps);
  return withFastItemGet({ keys: deps.keys, orgs: deps.orgs, clock: deps.clock, answers: deps.answers, ...shared }, createApp(deps, shared).callback());
}

/**
 * The Koa application: request context -> error envelope -> rate limits and API key -> routes.
 * No globals; everything passed in.
 */
export function createApp(deps: AppDeps, shared: SharedParts = sharedParts(deps)): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // faults are logged once, by the error envelope, with their request id
  const { config } = deps;
  // Behind n trusted proxies, ctx.ip is the X-Forwarded-For entry the outermost of them added (Koa takes the
  // first of the last n); without, X-Forwarded-For is ignored, as a client could write anything there.
  app.proxy = config.trustProxy > 0;
  app.maxIpsCount = config.trustProxy;
  const failedAuth = limitFailedAuthentication({ perMinute: config.rateLimitAuthFailures, burst: config.rateLimitAuthFailuresBurst });
  const perKey = limitPerKey(shared.perKey);
  const metrics = deps.metrics ?? silentMetrics;
  const searchTime = new SearchTime({ msPerMinute: config.searchMsPerKey, burstMs: config.searchMsPerKeyBurst }, { refused: () => metrics.searchRefused() });
  const routeDeps: RouteDeps = {
    ...deps,
    metrics,
    clock: deps.clock ?? systemClock,
    maxContentBytes: config.maxContentBytes,
    maxFileBytes: config.maxFileBytes,
    fileDownloads: config.fileDownloads,
    searchTime,
  };
  const auth = requireApiKey({ ...routeDeps, hashes: shared.hashes });
  // Failures are counted per address (past its allowance an address's failures are 429, its valid keys still
  // served); a good key then spends its own quota.
  const api: Koa.Middleware<AppState> = (ctx, next) => failedAuth(ctx, () => auth(ctx, () => perKey(ctx, next)));
  // One route file per domain file: health probes, items, files, moves, commits, reverts, history, trash, folders, changes, keys, git access, the dashboard.
  const router = itemRoutes(routeDeps);
  for (const routes of [healthRoutes, fileRoutes, moveRoutes, commitRoutes, revertRoutes, historyRoutes, trashRoutes, folderRoutes, changeRoutes, searchRoutes, keyRoutes, gitRoutes, dashboardRoutes]) {
    router.use(routes(routeDeps).routes());
  }
  const events = deps.events ?? localEvents(config.eventStreams);
  router.use(eventRoutes({ ...routeDeps, events }).routes());
  if (deps.webhooks) router.use(webhookRoutes({ webhooks: deps.webhooks }).routes());
  router.use(replicationRoutes({ replication: deps.replication }).routes());
  router.use(metricsRoutes({ access: config.metrics, exposition: deps.metricsExposition }).routes());
  router.use(mcpRoutes({ ...routeDeps, version: deps.version }).routes());
  router.use(apiDocsRoutes({ version: deps.version }).routes());
  const mcp = checkOrigin(config.allowedOrigins);

  app.use(requestContext(shared.notes));
  app.use(compression()); // outside the error envelope: failures are answered compressed too when large
  app.use(errorEnvelope(deps.logger));
  app.use(async (ctx, next) => {
    // The API's description is documentation, served without a key (see routes/apiDocs.ts).
    if (ctx.path === OPENAPI_PATH) return next();
    if (ctx.path === '/api' || ctx.path.startsWith('/api/')) return api(ctx, next);
    // MCP is the API in another protocol: the same key check and limits, after the Origin check.
    if (ctx.path === MCP_PATH) return mcp(ctx, () => api(ctx, next));
    // Git checks its HTTP Basic key in its routes; failed attempts count against the address all the same.
    if (ctx.path.startsWith('/git/')) return failedAuth(ctx, next);
    return next();
  });
  app.use(router.routes());
  // The router answers OPTIONS with an empty body; every response here is a JSON envelope.
  app.use(async (ctx, next) => {
    await next();
    if (ctx.method === 'OPTIONS' && ctx.status === 200 && !ctx.body) {
      ctx.body = { success: true, data: { allow: allowed(ctx) } };
    }
  });
  // A known route asked with a method it does not answer: 405 with `Allow` (RFC 9110 §15.5.6). The router
  // knows the methods but sets Allow only when it answers itself, so it answers, and the answer becomes our
  // error (the one envelope, the one table) carrying the list it set.
  app.use(async (ctx, next) => {
    await next();
    if (ctx.status === 405 || ctx.status === 501) {
      throw new MethodNotAllowed({ allow: allowed(ctx) });
    }
  });
  app.use(router.allowedMethods());
  return app;
}

/** The methods the router found for the path, as it set them in `Allow`. */
function allowed(ctx: Koa.Context): string[] {
  return ctx.response.get('Allow').split(/,\s*/).filter(Boolean);
}

/** GET /events written by this process (see LocalStreamHost): what createApp does unless told otherwise. */
function localEvents(settings: EventStreamSettings): EventDeps {
  const feed = new EventFeed(settings);
  return { feed, streams: new EventStreams(settings), settings, host: new LocalStreamHost(feed, settings) };
}
