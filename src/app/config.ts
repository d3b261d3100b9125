import { resolve } from 'node:path';
import { DEFAULT_CACHE_BYTES } from '../common/cacheBudget.js';
import { DEFAULT_PAGE_CACHES_BYTES } from '../storage/search/pageCaches.js';
import { isLogLevel, type LogLevel } from '../common/log.js';
import type { MetricsAccess } from '../common/metrics.js';
import type { WebhookSettings } from '../domain/webhooks.js';
import { parseRemotes, type ReplicationSettings } from '../storage/replication/remotes.js';
import { EVENT_STREAM_DEFAULTS, type EventStreamSettings } from '../http/events/streamLimits.js';
import { FILE_DOWNLOAD_DEFAULTS, type FileDownloadSettings } from '../http/fileDownloads.js';

/** Each setting comes from the environment, and each is also a `serve` flag (flags win). */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  maxContentBytes: number;
  /** The largest file item upload, in bytes (contract §8: over it, 413). */
  maxFileBytes: number;
  /** A file's text extraction is stopped after this long (422). */
  extractTimeoutMs: number;
  /** The V8 heap an extraction may use, in MiB (over it, 422). */
  extractMemoryMb: number;
  logLevel: LogLevel;
  /**
   * At most this many organizations open at once while some of them are idle: beyond it the least recently used
   * idle ones are closed, and opened again by their next request (0: all stay open; storage/repo/openOrgs.ts).
   */
  maxOpenOrgs: number;
  /**
   * The bytes the caches of item answers, contents, pack windows and delta bases may hold, all organizations
   * together (KNOWLEDGE_CACHE_MB; common/cacheBudget.ts shares it out).
   */
  cacheBytes: number;
  /** Objects written (since the last repack) that trigger an automatic `git repack` of an organization; 200 packs do too (0 turns it off). */
  autoRepackObjects: number;
  /** API requests per minute per key, sustained (0 turns the limit off). */
  rateLimitPerKey: number;
  /** How many of them one key may send at once (the token bucket's size). */
  rateLimitPerKeyBurst: number;
  /** Failed authentications per minute per client address, sustained (0 turns the limit off). */
  rateLimitAuthFailures: number;
  /** How many failures in a row an address may have before it is refused. */
  rateLimitAuthFailuresBurst: number;
  /** Keep a full-text index per organization and answer GET /search (off: no index file, /search answers 404). */
  search: boolean;
  /**
   * The bytes SQLite's page caches of the search indexes may hold, all organizations together
   * (KNOWLEDGE_SEARCH_CACHE_MB; storage/search/pageCaches.ts shares it out).
   */
  searchCacheBytes: number;
  /** Milliseconds of search a key may use per minute, sustained (0 turns the limit off; see http/searchTime.ts). */
  searchMsPerKey: number;
  /** How many of them one key may use at once. */
  searchMsPerKeyBurst: number;
  /** Browser origins, besides the server's own, allowed to call POST /mcp (a page of any other origin gets 403). */
  allowedOrigins: string[];
  /**
   * How many reverse proxies stand in front of the server (0: none, the default). With n > 0 the client's
   * address (what failed-authentication limits count) is the n-th X-Forwarded-For entry from the right, the
   * one the outermost trusted proxy added; entries further left are the client's to invent.
   */
  trustProxy: number;
  /** Who may read GET /metrics (see MetricsAccess). */
  metrics: MetricsAccess;
  /** GET /files: the memory downloads may hold at once (KNOWLEDGE_DOWNLOAD_MEMORY_MB) and how long one may stall. */
  fileDownloads: FileDownloadSettings;
  /** GET /events (KNOWLEDGE_EVENT_STREAMS_PER_KEY, KNOWLEDGE_EVENT_STREAMS_PER_ORG, KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND, KNOWLEDGE_EVENT_FANOUT, KNOWLEDGE_EVENT_FANOUT_PRIORITY; the rest are fixed defaults). */
  eventStreams: EventStreamSettings;
  /** Webhook delivery (README, Events). */
  webhooks: WebhookSettings;
  /** Git mirrors each organization's main is pushed to (KNOWLEDGE_REPLICATE; README, Scaling). */
  replication: ReplicationSettings;
}


export interface ConfigOverrides {
  host?: string;
  port?: string;
  dataDir?: string;
  maxContentBytes?: string;
  maxFileBytes?: string;
  extractTimeoutMs?: string;
  extractMemoryMb?: string;
  logLevel?: string;
  autoRepackObjects?: string;
  maxOpenOrgs?: string;
  cacheMb?: string;
  searchCacheMb?: string;
  rateLimitPerKey?: string;
  rateLimitPerKeyBurst?: string;
  rateLimitAuthFailures?: string;
  rateLimitAuthFailuresBurst?: string;
  search?: string;
  allowedOrigins?: string;
  trustProxy?: string;
  metrics?: string;
}

export class ConfigError extends Error {}

const MIB = 1024 * 1024;

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 3000,
  dataDir: './data',
  maxContentBytes: 1_048_576,
  maxFileBytes: 25 * 1024 * 1024,
  extractTimeoutMs: 30_000,
  extractMemoryMb: 256,
  logLevel: 'info',
  autoRepackObjects: 10_000,
  // A thousand small organizations (0.6 MiB each once searched, README: Many small organizations) is ~0.6 GiB.
  maxOpenOrgs: 1_000,
  cacheMb: DEFAULT_CACHE_BYTES / (1024 * 1024),
  // Generous on purpose, so the defaults never throttle a normal agent: a key may send a
  // minute's worth, 6,000 requests, at once, and 100 a second for as long as it likes.
  rateLimitPerKey: 6_000,
  rateLimitPerKeyBurst: 6_000,
  // A client with a good key never fails; 40 failures in a row, then one every 3 s, is plenty for a typo.
  rateLimitAuthFailures: 20,
  rateLimitAuthFailuresBurst: 40,
  search: true,
  // Sixteen organizations at the full 16 MiB each; SQLite's WebAssembly heap, which holds them, stops at 2 GiB.
  searchCacheMb: DEFAULT_PAGE_CACHES_BYTES / (1024 * 1024),
  // Half of the one event loop's time, sustained, with half a minute of it at once: a key searching back to back
  // at full speed leaves the server the other half; an agent that searches between other work never meets it.
  searchMsPerKey: 30_000,
  searchMsPerKeyBurst: 30_000,
  allowedOrigins: [] as string[],
  trustProxy: 0,
  metrics: 'local',
  webhookRetryBaseMs: 30_000,
  webhookTimeoutMs: 10_000,
  replicateTimeoutMs: 60_000,
  replicateRetryBaseMs: 1_000,
  replicateRetryMaxMs: 300_000,
  replicateConcurrency: 4,
  replicateIntervalMs: 0,
} as const;

export function loadConfig(env: NodeJS.ProcessEnv, overrides: ConfigOverrides = {}): Config {
  const pick = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] || undefined);
  const port = integer(pick(overrides.port, 'PORT'), DEFAULTS.port, 'port', 0, 65535);
  const maxContentBytes = integer(pick(overrides.maxContentBytes, 'KNOWLEDGE_MAX_CONTENT_BYTES'), DEFAULTS.maxContentBytes, 'KNOWLEDGE_MAX_CONTENT_BYTES', 1, 64 * 1024 * 1024);
  const maxFileBytes = integer(pick(overrides.maxFileBytes, 'KNOWLEDGE_MAX_FILE_BYTES'), DEFAULTS.maxFileBytes, 'KNOWLEDGE_MAX_FILE_BYTES', 1, 1024 * 1024 * 1024);
  const extractTimeoutMs = integer(pick(overrides.extractTimeoutMs, 'KNOWLEDGE_EXTRACT_TIMEOUT_MS'), DEFAULTS.extractTimeoutMs, 'KNOWLEDGE_EXTRACT_TIMEOUT_MS', 100, 600_000);
  const extractMemoryMb = integer(pick(overrides.extractMemoryMb, 'KNOWLEDGE_EXTRACT_MEMORY_MB'), DEFAULTS.extractMemoryMb, 'KNOWLEDGE_EXTRACT_MEMORY_MB', 32, 8192);
  const autoRepackObjects = integer(pick(overrides.autoRepackObjects, 'KNOWLEDGE_AUTO_REPACK_OBJECTS'), DEFAULTS.autoRepackObjects, 'KNOWLEDGE_AUTO_REPACK_OBJECTS', 0, 10_000_000);
  const maxOpenOrgs = integer(pick(overrides.maxOpenOrgs, 'KNOWLEDGE_MAX_OPEN_ORGS'), DEFAULTS.maxOpenOrgs, 'KNOWLEDGE_MAX_OPEN_ORGS', 0, 10_000_000);
  const cacheBytes = integer(pick(overrides.cacheMb, 'KNOWLEDGE_CACHE_MB'), DEFAULTS.cacheMb, 'KNOWLEDGE_CACHE_MB', 8, 1024 * 1024) * MIB;
  // At most half of SQLite's 2 GiB heap: the rest holds each open index's own (~0.2 MiB) and its transactions.
  const searchCacheBytes = integer(pick(overrides.searchCacheMb, 'KNOWLEDGE_SEARCH_CACHE_MB'), DEFAULTS.searchCacheMb, 'KNOWLEDGE_SEARCH_CACHE_MB', 1, 1024) * MIB;
  const perMinute = (flag: string | undefined, name: string, fallback: number): number => integer(pick(flag, name), fallback, name, 0, 10_000_000);
  const rateLimitPerKey = perMinute(overrides.rateLimitPerKey, 'KNOWLEDGE_RATE_LIMIT_PER_KEY', DEFAULTS.rateLimitPerKey);
  const rateLimitAuthFailures = perMinute(overrides.rateLimitAuthFailures, 'KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES', DEFAULTS.rateLimitAuthFailures);
  // A burst left unset is the default one while the rate is the default, else one minute's worth of the rate.
  const burst = (flag: string | undefined, name: string, rate: number, defaultRate: number, defaultBurst: number): number =>
    integer(pick(flag, name), rate === defaultRate ? defaultBurst : Math.max(1, rate), name, 1, 10_000_000);
  const rateLimitPerKeyBurst = burst(overrides.rateLimitPerKeyBurst, 'KNOWLEDGE_RATE_LIMIT_PER_KEY_BURST', rateLimitPerKey, DEFAULTS.rateLimitPerKey, DEFAULTS.rateLimitPerKeyBurst);
  const rateLimitAuthFailuresBurst = burst(
    overrides.rateLimitAuthFailuresBurst,
    'KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES_BURST',
    rateLimitAuthFailures,
    DEFAULTS.rateLimitAuthFailures,
    DEFAULTS.rateLimitAuthFailuresBurst,
  );
  const searchMsPerKey = perMinute(undefined, 'KNOWLEDGE_SEARCH_MS_PER_KEY', DEFAULTS.searchMsPerKey);
  const searchMsPerKeyBurst = burst(undefined, 'KNOWLEDGE_SEARCH_MS_PER_KEY_BURST', searchMsPerKey, DEFAULTS.searchMsPerKey, DEFAULTS.searchMsPerKeyBurst);
  const searchSetting = oneOf('KNOWLEDGE_SEARCH', pick(overrides.search, 'KNOWLEDGE_SEARCH') ?? (DEFAULTS.search ? 'on' : 'off'), ['on', 'off']);
  const allowedOrigins = origins(pick(overrides.allowedOrigins, 'KNOWLEDGE_ALLOWED_ORIGINS'));
  const trustProxy = proxies(pick(overrides.trustProxy, 'KNOWLEDGE_TRUST_PROXY'));
  const metrics = metricsAccess(pick(overrides.metrics, 'KNOWLEDGE_METRICS') ?? DEFAULTS.metrics);
  const eventStreams: EventStreamSettings = {
    ...EVENT_STREAM_DEFAULTS,
    streamsPerKey: integer(env.KNOWLEDGE_EVENT_STREAMS_PER_KEY || undefined, EVENT_STREAM_DEFAULTS.streamsPerKey, 'KNOWLEDGE_EVENT_STREAMS_PER_KEY', 1, 100_000),
    streamsPerOrg: integer(env.KNOWLEDGE_EVENT_STREAMS_PER_ORG || undefined, EVENT_STREAM_DEFAULTS.streamsPerOrg, 'KNOWLEDGE_EVENT_STREAMS_PER_ORG', 1, 100_000),
    streamWritesPerSecond: integer(env.KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND || undefined, EVENT_STREAM_DEFAULTS.streamWritesPerSecond, 'KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND', 10, 10_000_000),
    // Who writes the streams: a process apart from the writer, or the server's own (README, Events).
    fanOut: oneOf('KNOWLEDGE_EVENT_FANOUT', env.KNOWLEDGE_EVENT_FANOUT || 'process', ['process', 'server']),
    // The fan-out process's priority: the idle class while it keeps up, or niceness +10 alone.
    fanOutPriority: oneOf('KNOWLEDGE_EVENT_FANOUT_PRIORITY', env.KNOWLEDGE_EVENT_FANOUT_PRIORITY || 'idle', ['idle', 'nice']),
  };
  const fileDownloads: FileDownloadSettings = {
    ...FILE_DOWNLOAD_DEFAULTS,
    memoryBytes: integer(env.KNOWLEDGE_DOWNLOAD_MEMORY_MB || undefined, FILE_DOWNLOAD_DEFAULTS.memoryBytes / MIB, 'KNOWLEDGE_DOWNLOAD_MEMORY_MB', 1, 1024 * 1024) * MIB,
  };
  const allowPrivate = oneOf('KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE', env.KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE || 'off', ['on', 'off']);
  const webhooks: WebhookSettings = {
    allowPrivate: allowPrivate === 'on',
    retryBaseMs: integer(env.KNOWLEDGE_WEBHOOK_RETRY_BASE_MS || undefined, DEFAULTS.webhookRetryBaseMs, 'KNOWLEDGE_WEBHOOK_RETRY_BASE_MS', 10, 3_600_000),
    timeoutMs: integer(env.KNOWLEDGE_WEBHOOK_TIMEOUT_MS || undefined, DEFAULTS.webhookTimeoutMs, 'KNOWLEDGE_WEBHOOK_TIMEOUT_MS', 100, 120_000),
  };
  const replication = replicationSettings(env);
  const logLevel = pick(overrides.logLevel, 'LOG_LEVEL') ?? DEFAULTS.logLevel;
  if (!isLogLevel(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of error, warn, info, debug (got "${logLevel}")`);
  return {
    host: pick(overrides.host, 'HOST') ?? DEFAULTS.host,
    port,
    dataDir: resolve(pick(overrides.dataDir, 'KNOWLEDGE_DATA_DIR') ?? DEFAULTS.dataDir),
    maxContentBytes,
    maxFileBytes,
    extractTimeoutMs,
    extractMemoryMb,
    logLevel,
    autoRepackObjects,
    maxOpenOrgs,
    cacheBytes,
    searchCacheBytes,
    search: searchSetting === 'on',
    searchMsPerKey,
    searchMsPerKeyBurst,
    allowedOrigins,
    rateLimitPerKey,
    rateLimitPerKeyBurst,
    rateLimitAuthFailures,
    rateLimitAuthFailuresBurst,
    trustProxy,
    metrics,
    fileDownloads,
    eventStreams,
    webhooks,
    replication,
  };
}

function replicationSettings(env: NodeJS.ProcessEnv): ReplicationSettings {
  let remotes: ReplicationSettings['remotes'];
  try {
    remotes = parseRemotes(env.KNOWLEDGE_REPLICATE ?? '');
  } catch (err) {
    throw new ConfigError(`KNOWLEDGE_REPLICATE: ${(err as Error).message}`);
  }
  const ms = (name: string, fallback: number, min: number, max: number): number => integer(env[name] || undefined, fallback, name, min, max);
  const retryBaseMs = ms('KNOWLEDGE_REPLICATE_RETRY_BASE_MS', DEFAULTS.replicateRetryBaseMs, 10, 3_600_000);
  const retryMaxMs = ms('KNOWLEDGE_REPLICATE_RETRY_MAX_MS', Math.max(DEFAULTS.replicateRetryMaxMs, retryBaseMs), 10, 86_400_000);
  if (retryMaxMs < retryBaseMs) throw new ConfigError(`KNOWLEDGE_REPLICATE_RETRY_MAX_MS (${retryMaxMs}) must not be below KNOWLEDGE_REPLICATE_RETRY_BASE_MS (${retryBaseMs})`);
  return {
    remotes,
    timeoutMs: ms('KNOWLEDGE_REPLICATE_TIMEOUT_MS', DEFAULTS.replicateTimeoutMs, 100, 3_600_000),
    retryBaseMs,
    retryMaxMs,
    concurrency: ms('KNOWLEDGE_REPLICATE_CONCURRENCY', DEFAULTS.replicateConcurrency, 1, 64),
    intervalMs: ms('KNOWLEDGE_REPLICATE_INTERVAL_MS', DEFAULTS.replicateIntervalMs, 0, 3_600_000),
  };
}

/** The shortest metrics token taken: one a scraper keeps in a file, not one a person remembers. */
const MIN_TOKEN = 16;

function metricsAccess(raw: string): MetricsAccess {
  if (raw === 'off' || raw === 'local' || raw === 'on') return { mode: raw };
  if (raw.startsWith('token:')) {
    const token = raw.slice('token:'.length);
    if (token.length >= MIN_TOKEN && /^[\x21-\x7e]+$/.test(token)) return { mode: 'token', token };
    throw new ConfigError(`KNOWLEDGE_METRICS token: must be at least ${MIN_TOKEN} printable characters without spaces`);
  }
  throw new ConfigError(`KNOWLEDGE_METRICS must be off, local, on or token:<secret> (got "${raw}")`);
}

/** `off` (0), `on` (one proxy), or how many proxies are in front (1–16). */
function proxies(raw: string | undefined): number {
  if (raw === undefined || raw === 'off') return DEFAULTS.trustProxy;
  if (raw === 'on') return 1;
  if (/^\d+$/.test(raw) && Number(raw) <= 16) return Number(raw);
  throw new ConfigError(`KNOWLEDGE_TRUST_PROXY must be off, on, or the number of proxies in front of the server, 0 to 16 (got "${raw}")`);
}

function integer(raw: string | undefined, fallback: number, name: string, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

/** A comma-separated list of origins, each `scheme://host[:port]` exactly as a browser sends it. */
function origins(raw: string | undefined): string[] {
  if (raw === undefined) return [...DEFAULTS.allowedOrigins];
  const list = raw.split(',').map((o) => o.trim()).filter(Boolean);
  for (const origin of list) {
    let canonical: string | undefined;
    try {
      canonical = new URL(origin).origin;
    } catch {
      canonical = undefined;
    }
    if (canonical !== origin) throw new ConfigError(`KNOWLEDGE_ALLOWED_ORIGINS must list origins like https://app.example.com, without a path or a trailing slash (got "${origin}")`);
  }
  return list;
}

/** `value` when it is one of `allowed`; else the start stops: "<name> must be a, b or c (got "<value>")". */
function oneOf<const T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(`${name} must be ${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)} (got "${value}")`);
}
