import type { RequestListener } from 'node:http';
import { packageVersion } from '../common/packageInfo.js';
import type { Logger } from '../common/log.js';
import { systemClock, type Clock } from '../common/clock.js';
import { EventFeed } from '../domain/events.js';
import { Webhooks } from '../domain/webhooks.js';
import { webhookSender } from './webhookSender.js';
import { promises as nodeFs } from 'node:fs';
import { shareCacheBytes } from '../common/cacheBudget.js';
import { indexesThatFit } from '../storage/search/pageCaches.js';
import { createHandler } from '../http/app.js';
import { warmUp } from '../http/warmUp.js';
import { ext4WithoutJournal, type JournalCheck } from '../storage/fs/ext4Journal.js';
import { ItemAnswers } from '../http/itemAnswers.js';
import { createExtractor } from './extraction.js';
import { EventStreams } from '../http/events/streamLimits.js';
import { ChildStreamHost } from '../http/events/fanOutHost.js';
import { LocalStreamHost } from '../http/events/streamHost.js';
import { PromMetrics } from './promMetrics.js';
import { listen } from '../http/listen.js';
import type { FsPromises } from '../storage/fs/fs.js';
import type { Config } from './config.js';
import { openServingStore, type Store } from './store.js';

export { DEFAULT_ORG } from './store.js';

export interface RunningServer {
  url: string;
  port: number;
  /** Stops accepting, lets requests in flight finish (at most `graceMs`), flushes, releases the data dir. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The server process: the data directory held by this process, the HTTP API
 * on it, and the order they stop in (no new requests, requests in flight
 * finish, writes flushed, the data directory let go).
 */
export async function startServer(args: {
  config: Config;
  logger: Logger;
  /** Where the first-start admin key line goes (stdout). */
  announce?: (line: string) => void;
  fs?: FsPromises;
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Whether the data directory is on ext4 without a journal (storage/fs/ext4Journal.ts; a stand-in in tests). */
  noJournal?: JournalCheck;
  /** What is readied once the server listens (http/warmUp.ts; a stand-in in tests, to serve before it is done). */
  warmUp?: () => Promise<void>;
}): Promise<RunningServer> {
  const { config, logger, announce = (line) => process.stdout.write(`${line}\n`), clock = systemClock } = args;
  // The port is bound before the data directory is touched: a busy port (PortInUse) leaves nothing
  // behind, so a first start that fails there has not printed, and lost, the one admin key.
  // Requests that arrive while the store opens wait for it (they are answered once it is open).
  let opened: (handler: RequestListener | null) => void = () => {};
  const app = new Promise<RequestListener | null>((resolve) => (opened = resolve));
  const http = await listen({ handler: (req, res) => void app.then((handler) => (handler ? handler(req, res) : res.destroy())), host: config.host, port: config.port });
  let store: Store;
  const feed = new EventFeed(config.eventStreams);
  const streams = new EventStreams(config.eventStreams);
  // The event streams' sockets are written by a process apart from the writer (README, Events).
  const eventHost = config.eventStreams.fanOut === 'server' ? new LocalStreamHost(feed, config.eventStreams) : new ChildStreamHost({ feed, settings: config.eventStreams, logger });
  let webhooks: Webhooks;
  try {
    // Figures are kept only when someone may read them; the gauges read the store once it is open.
    const metrics = config.metrics.mode === 'off' ? undefined : new PromMetrics();
    // One budget for what every organization's reads keep, whatever the number open (common/cacheBudget.ts).
    const caches = shareCacheBytes(config.cacheBytes);
    const answers = new ItemAnswers(caches.answers);
    store = await openServingStore({
      dataDir: config.dataDir,
      logger,
      fs: args.fs,
      env: args.env,
      clock,
      autoRepackObjects: config.autoRepackObjects,
      maxOpenOrgs: config.maxOpenOrgs,
      caches,
      search: config.search,
      searchCacheBytes: config.searchCacheBytes,
      announce,
      metrics,
      replication: config.replication,
    });
    const { orgs } = store;
    metrics?.readFrom(orgs);
    metrics?.readCachesFrom(() => ({ answers: answers.bytes, ...orgs.cacheBytes() }));
    if (store.replication) metrics?.readReplicationFrom(store.replication);
    webhooks = new Webhooks({
      orgs: store.orgs,
      keys: store.keys,
      feed,
      send: webhookSender({ allowPrivate: config.webhooks.allowPrivate }),
      fs: args.fs ?? (nodeFs as unknown as FsPromises),
      settings: config.webhooks,
      clock,
      logger,
    });
    try {
      // Deliveries queued before a stop or a crash resume at once.
      await webhooks.start();
      const events = { feed, streams, settings: config.eventStreams, host: eventHost };
      opened(createHandler({ config, orgs: store.orgs, keys: store.keys, answers, logger, clock, metrics, metricsExposition: metrics && (() => metrics.render()), version: packageVersion(), events, webhooks, replication: store.replication, extractor: createExtractor(config) }));
    } catch (err) {
      await webhooks.stop();
      await store.close();
      throw err;
    }
  } catch (err) {
    opened(null);
    await http.close(0);
    throw err;
  }
  const { url, port } = http;
  logger.info('listening', { url, dataDir: config.dataDir });
  // The schemas and the MCP SDK's modules are readied once the server listens, not before (http/warmUp.ts): it
  // serves sooner after a start. A failure here is retried by the first request that needs it.
  setImmediate(() => {
    (args.warmUp ?? warmUp)().catch((err: unknown) => logger.warn('readying the request schemas or the MCP endpoint failed; the first request that needs it tries again', { error: String(err) }));
  });
  const fit = indexesThatFit(config.searchCacheBytes);
  if (config.search && (config.maxOpenOrgs === 0 || config.maxOpenOrgs > fit)) {
    // Not refused: a data directory with fewer organizations than that never meets it.
    logger.warn('more organizations may stay open than search indexes fit in SQLite\'s heap (2 GiB): past that, searches fail with "out of memory"', {
      maxOpenOrgs: config.maxOpenOrgs === 0 ? 'all' : config.maxOpenOrgs,
      indexesThatFit: fit,
      fix: `KNOWLEDGE_MAX_OPEN_ORGS=${Math.min(fit, 1_000)} or less (or a smaller KNOWLEDGE_SEARCH_CACHE_MB)`,
    });
  }
  const unjournalled = await (args.noJournal ?? ext4WithoutJournal)(config.dataDir);
  if (unjournalled) {
    // Not refused: it works, only slower, and the disk is the operator's choice (README, Operations).
    logger.warn('the data directory is on ext4 without a journal: each new file skips the inodes freed in the last minutes, so writes cost more CPU the more files were deleted lately', {
      device: unjournalled.device,
      fix: 'a file system with a journal (ext4 as mkfs.ext4 makes it, or xfs); README, "The file system under the data directory"',
    });
  }
  let closing: Promise<void> | undefined;
  const close = (graceMs = 10_000): Promise<void> =>
    (closing ??= (async () => {
      // Event streams never finish by themselves: end them (clients resume with Last-Event-ID), then wait for the rest.
      streams.endAll();
      await Promise.all([http.close(graceMs), eventHost.close(graceMs)]);
      await webhooks.stop();
      await store.close();
      logger.info('stopped');
    })());
  return { url, port, close };
}
