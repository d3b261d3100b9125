import { promises as nodeFs } from 'node:fs';
import type { CacheShares } from '../common/cacheBudget.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import type { Metrics } from '../common/metrics.js';
import { createOrganization } from '../domain/orgs.js';
import { readNeed } from '../domain/search.js';
import { PageCaches } from '../storage/search/pageCaches.js';
import { lockDataDir, serverPid } from '../storage/fs/dataDirLock.js';
import { watchDirectory } from '../storage/fs/fileWatch.js';
import type { FsPromises } from '../storage/fs/fs.js';
import { GitCli } from '../storage/git/gitCli.js';
import { GitRunner } from '../storage/git/gitRunner.js';
import { KeyStore } from '../storage/keys/keyStore.js';
import { OrgStore } from '../storage/repo/orgStore.js';
import { RepoCaches } from '../storage/repo/repoCaches.js';
import type { ReplicationSettings } from '../storage/replication/remotes.js';
import { Replication } from '../storage/replication/replication.js';

/** The organization a fresh data directory starts with. */
export const DEFAULT_ORG = 'default';

/** How often key last-used times are written out (never once per request). */
const USAGE_FLUSH_MS = 30_000;

/** A data directory's stores, as one process uses them. */
export interface Store {
  dataDir: string;
  orgs: OrgStore;
  keys: KeyStore;
  /** Pushes to the git mirrors (the serving store only, when KNOWLEDGE_REPLICATE names any). */
  replication?: Replication;
  /** Flushes what is pending and lets the data directory go. */
  close(): Promise<void>;
}

/** What every opening of a data directory takes; all but the directory have defaults for a real process. */
export interface StoreOptions {
  dataDir: string;
  logger: Logger;
  fs?: FsPromises;
  /** The environment C git runs with. */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
}

/**
 * The data directory as the server holds it: locked for this process (a
 * second server refuses to start), lock files left by a crash removed,
 * keys.json watched, key usage written out every 30 s, repositories repacked
 * as they grow, idle ones closed beyond `maxOpenOrgs` open. A fresh directory
 * gets the default organization; its first admin key goes to `announce`
 * (stdout), once.
 */
export async function openServingStore(
  args: StoreOptions & {
    autoRepackObjects: number;
    maxOpenOrgs?: number;
    /** The shares of KNOWLEDGE_CACHE_MB the repositories' caches hold, together (default: those of DEFAULT_CACHE_BYTES). */
    caches?: Pick<CacheShares, 'contents' | 'windows' | 'bases'>;
    search?: boolean;
    /** What the search indexes' SQLite page caches hold together, bytes (KNOWLEDGE_SEARCH_CACHE_MB; default: the process's budget). */
    searchCacheBytes?: number;
    announce: (line: string) => void;
    metrics?: Metrics;
    replication?: ReplicationSettings;
  },
): Promise<Store> {
  const { dataDir, logger } = args;
  const fs = args.fs ?? (nodeFs as unknown as FsPromises);
  const dirLock = await lockDataDir(fs, dataDir);
  // Started now, while the server is small: each git it starts then costs a message, not a fork of the server.
  const runner = new GitRunner(logger);
  try {
    // Not waited for: the first git run waits, if it comes before the runner is ready.
    runner.start().catch((err: unknown) => logger.warn('git runner process not started; the next git run tries again', { error: String(err) }));
    const git = new GitCli(args.env ?? process.env, runner);
    const { metrics } = args;
    const replication =
      args.replication && args.replication.remotes.length > 0
        ? new Replication({ fs, git, settings: args.replication, logger, pushed: (outcome, seconds) => metrics?.replicationPush({ outcome, seconds }) })
        : undefined;
    const orgs = new OrgStore({
      fs,
      dataDir,
      logger,
      git,
      owner: true,
      autoRepackObjects: args.autoRepackObjects,
      metrics,
      search: args.search === false ? undefined : { readNeed, pageCaches: args.searchCacheBytes === undefined ? undefined : new PageCaches(args.searchCacheBytes, logger) },
      opened:
        replication &&
        ((repo) => {
          // A mirrored organization's workers hold its repository for the server's life.
          if (replication.replicates(repo.orgId)) orgs.keepOpen(repo.orgId);
          return replication.attach(repo);
        }),
      maxOpen: args.maxOpenOrgs,
      caches: args.caches && RepoCaches.shared(args.caches),
    });
    const keys = new KeyStore({ fs, dataDir, logger, watch: watchDirectory });
    await keys.startWatching();
    const existing = await orgs.list();
    if (existing.length === 0) {
      const { secret } = await createOrganization({ orgs, keys, orgId: DEFAULT_ORG, clock: args.clock });
      args.announce(`Admin API key for organization "${DEFAULT_ORG}": ${secret}`);
    } else {
      // Only a key's hash is kept, so a lost first key cannot be shown again: say what replaces it.
      const org = existing.includes(DEFAULT_ORG) ? DEFAULT_ORG : '<orgId>';
      logger.info('the admin key is printed on the first start only; if it is lost, make a new one', {
        recovery: `knowledge-store key create --org ${org} --role admin --data-dir ${dataDir}`,
      });
    }
    if (replication) void startReplication(orgs, replication, logger);
    const flushUsage = (): Promise<void> => keys.flushUsage().catch((err: unknown) => logger.warn('could not record key usage', { error: String(err) }));
    const usageTimer = setInterval(() => void flushUsage(), USAGE_FLUSH_MS);
    usageTimer.unref();
    const close = async (): Promise<void> => {
      clearInterval(usageTimer);
      await replication?.stop();
      await orgs.closeAll();
      await runner.close();
      await flushUsage();
      keys.stopWatch();
      await dirLock.release();
    };
    return { dataDir, orgs, keys, replication, close };
  } catch (err) {
    await runner.close();
    await dirLock.release();
    throw err;
  }
}

/**
 * Opens, in the background, every organization that has a mirror, so that each mirror gets its first push
 * at start (a node that was down catches its mirrors up) rather than at the organization's first request.
 */
async function startReplication(orgs: OrgStore, replication: Replication, logger: Logger): Promise<void> {
  try {
    for (const orgId of await orgs.list()) {
      if (!replication.replicates(orgId)) continue;
      await orgs.get(orgId).catch((err: unknown) => logger.error('could not open an organization to replicate it', { org: orgId, error: String(err) }));
    }
  } catch (err) {
    logger.error('could not list the organizations to replicate', { error: String(err) });
  }
}

/**
 * The data directory as the admin commands use it, beside a running server or
 * not: no lock (keys change under the key file's lock, organizations appear by
 * atomic rename), nothing watched, nothing repacked behind the command's back.
 */
export function openAdminStore(args: StoreOptions): Store & { serverPid(): Promise<number | null> } {
  const { dataDir, logger } = args;
  const fs = args.fs ?? (nodeFs as unknown as FsPromises);
  const git = new GitCli(args.env ?? process.env);
  const orgs = new OrgStore({ fs, dataDir, logger, git });
  const keys = new KeyStore({ fs, dataDir, logger });
  return {
    dataDir,
    orgs,
    keys,
    serverPid: () => serverPid(fs, dataDir),
    close: async () => {
      await orgs.closeAll();
      await keys.flushUsage();
    },
  };
}

/**
 * The data directory held for one admin command that needs what only its
 * owner may touch (the search index: one writer per file). Refused at once,
 * with the server's pid, while a server runs.
 */
export async function openExclusiveStore(args: StoreOptions): Promise<Store> {
  const { dataDir, logger } = args;
  const fs = args.fs ?? (nodeFs as unknown as FsPromises);
  const dirLock = await lockDataDir(fs, dataDir, { waitMs: 0 });
  const git = new GitCli(args.env ?? process.env);
  const orgs = new OrgStore({ fs, dataDir, logger, git, owner: true, search: { readNeed } });
  const keys = new KeyStore({ fs, dataDir, logger });
  return {
    dataDir,
    orgs,
    keys,
    close: async () => {
      try {
        await orgs.closeAll();
        await keys.flushUsage();
      } finally {
        await dirLock.release();
      }
    },
  };
}
