import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { CACHE_NAMES, type CacheName } from '../common/cacheBudget.js';
import type { Metrics } from '../common/metrics.js';
import type { ReplicationTotals } from '../storage/replication/replication.js';

/** Latency buckets, in seconds: a cached read is well under a millisecond, a repack of a large organization minutes. */
const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SLOW = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const BATCH = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/** What a gauge reads when /metrics is scraped (the stores' own counts, never a copy kept in step). */
interface MetricsSources {
  stats(): { openOrganizations: number; queuedWrites: number };
}

/** What the replication gauges read (none when no mirror is configured). */
interface ReplicationSource {
  totals(): Promise<ReplicationTotals>;
}

/**
 * The Metrics the layers report to, kept in a prom-client registry of its own (no global one: two servers in
 * one process, as in the tests, keep their own figures), with Node's process metrics beside them.
 */
export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly requestSeconds: Histogram<'method' | 'route'>;
  private readonly commits: Counter;
  private readonly groupCommits: Histogram;
  private readonly fsyncSeconds: Histogram;
  private readonly repackSeconds: Histogram<'result'>;
  private readonly searchSeconds: Histogram;
  private readonly searchRefusals: Counter;
  private readonly searchQuerySeconds: Counter;
  private readonly orgCloses: Counter;
  private readonly pushes: Counter<'result'>;
  private readonly pushSeconds: Histogram;

  /** What the gauges read; nothing (zeros) until the store is open. */
  private sources: MetricsSources | undefined;
  private replication: ReplicationSource | undefined;
  private caches: (() => Record<CacheName, number>) | undefined;

  constructor() {
    const stats = (): ReturnType<MetricsSources['stats']> => this.sources?.stats() ?? { openOrganizations: 0, queuedWrites: 0 };
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({ name: 'knowledge_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status', labelNames: ['method', 'route', 'status'], registers });
    this.requestSeconds = new Histogram({ name: 'knowledge_http_request_duration_seconds', help: 'Time to answer an HTTP request, by method and route pattern', labelNames: ['method', 'route'], buckets: LATENCY, registers });
    this.commits = new Counter({ name: 'knowledge_commits_total', help: 'Commits published (every change is one)', registers });
    this.groupCommits = new Histogram({ name: 'knowledge_group_commit_size', help: 'Commits per group commit (one pack, one fsync round, one ref update)', buckets: BATCH, registers });
    this.fsyncSeconds = new Histogram({ name: 'knowledge_group_commit_fsync_seconds', help: 'Time a group commit spent making its pack durable (fsyncs)', buckets: LATENCY, registers });
    this.repackSeconds = new Histogram({ name: 'knowledge_repack_duration_seconds', help: 'Time a repack with C git took, by result (ok, failed)', labelNames: ['result'], buckets: SLOW, registers });
    this.searchSeconds = new Histogram({ name: 'knowledge_search_duration_seconds', help: 'Time to answer a search query', buckets: LATENCY, registers });
    this.searchQuerySeconds = new Counter({ name: 'knowledge_search_query_seconds_total', help: 'Time search queries took themselves, waits left out: what keys are charged of their search time', registers });
    this.searchRefusals = new Counter({ name: 'knowledge_search_time_refusals_total', help: 'Searches refused (429) because their key had used its search time', registers });
    this.orgCloses = new Counter({ name: 'knowledge_organizations_closed_total', help: 'Organizations closed for being idle while more than KNOWLEDGE_MAX_OPEN_ORGS were open', registers });
    this.pushes = new Counter({ name: 'knowledge_replication_pushes_total', help: 'Pushes to git mirrors, by result (pushed, rejected, failed)', labelNames: ['result'], registers });
    this.pushSeconds = new Histogram({ name: 'knowledge_replication_push_duration_seconds', help: 'Time a push to a git mirror took (any result)', buckets: SLOW, registers });
    const totals = async (): Promise<ReplicationTotals | undefined> => this.replication?.totals();
    new Gauge({
      name: 'knowledge_replication_mirrors',
      help: 'Git mirrors of the open organizations, by state (ok, pushing, failing, rejected)',
      labelNames: ['state'],
      registers,
      async collect() {
        const t = await totals();
        for (const state of ['ok', 'pushing', 'failing', 'rejected'] as const) this.set({ state }, t?.mirrors[state] ?? 0);
      },
    });
    new Gauge({
      name: 'knowledge_replication_lag_commits',
      help: 'Commits on main not yet on a mirror: the largest over every mirror of every open organization',
      registers,
      async collect() {
        this.set((await totals())?.maxLagCommits ?? 0);
      },
    });
    new Gauge({
      name: 'knowledge_replication_lag_seconds',
      help: 'Age of the oldest commit not yet on a mirror: the largest over every mirror of every open organization',
      registers,
      async collect() {
        this.set((await totals())?.maxLagSeconds ?? 0);
      },
    });
    new Gauge({
      name: 'knowledge_write_queue_depth',
      help: 'Writes waiting for their group commit, across organizations',
      registers,
      collect() {
        this.set(stats().queuedWrites);
      },
    });
    const caches = (): Record<CacheName, number> | undefined => this.caches?.();
    new Gauge({
      name: 'knowledge_cache_bytes',
      help: 'Bytes the caches hold, all organizations together, by cache (answers, contents, windows, bases); KNOWLEDGE_CACHE_MB bounds their sum',
      labelNames: ['cache'],
      registers,
      collect() {
        const held = caches();
        for (const cache of CACHE_NAMES) this.set({ cache }, held?.[cache] ?? 0);
      },
    });
    new Gauge({
      name: 'knowledge_open_organizations',
      help: 'Organizations whose repository is open in this process',
      registers,
      collect() {
        this.set(stats().openOrganizations);
      },
    });
  }

  /** Where the gauges read open organizations and queued writes (the store, once it is open). */
  readFrom(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** Where the cache gauge reads what each cache holds (the server's caches, once the store is open). */
  readCachesFrom(source: () => Record<CacheName, number>): void {
    this.caches = source;
  }

  /** Where the replication gauges read their figures (the server's Replication, when mirrors are configured). */
  readReplicationFrom(source: ReplicationSource): void {
    this.replication = source;
  }

  replicationPush(p: { outcome: 'pushed' | 'rejected' | 'failed'; seconds: number }): void {
    this.pushes.inc({ result: p.outcome });
    this.pushSeconds.observe(p.seconds);
  }

  request(r: { method: string; route: string; status: number; seconds: number }): void {
    this.requests.inc({ method: r.method, route: r.route, status: String(r.status) });
    this.requestSeconds.observe({ method: r.method, route: r.route }, r.seconds);
  }

  groupCommit(c: { commits: number; fsyncSeconds: number }): void {
    this.commits.inc(c.commits);
    this.groupCommits.observe(c.commits);
    this.fsyncSeconds.observe(c.fsyncSeconds);
  }

  repack(r: { seconds: number; ok: boolean }): void {
    this.repackSeconds.observe({ result: r.ok ? 'ok' : 'failed' }, r.seconds);
  }

  search(s: { seconds: number; querySeconds: number }): void {
    this.searchSeconds.observe(s.seconds);
    this.searchQuerySeconds.inc(s.querySeconds);
  }

  searchRefused(): void {
    this.searchRefusals.inc();
  }

  orgClosed(): void {
    this.orgCloses.inc();
  }

  /** The Prometheus text exposition of everything above. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
