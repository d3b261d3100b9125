import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SEARCH_FILE } from '../../src/storage/repo/orgStore.js';
import { benchQueries, type SearchQuery } from './corpus.js';
import { copyFixture, gitdirOf, itemPath, type Fixture } from './fixtures.js';
import { describeLoad, runLoad, type LoadResult } from './load.js';
import { GC_ON_SIGNAL, memoryOf, type Pinning } from './machine.js';
import { loadRankingIndex, measureGet, measurePut, serverComplaints, logLine, serverLog, stopServer, type LogEntry, type PutRun } from './ours.js';
import { startOurServer, type Served } from './processes.js';
import type { BenchSettings } from './settings.js';
import { progress } from './settings.js';
import { jsonOf, stats, timedGet, type Stats } from './timing.js';

/**
 * The search phase of `npm run bench`: `GET /search` on a fixture of ~2 KB
 * corpus items (corpus.ts), and what keeping the index costs the rest of the
 * server. Every figure compares the server with `KNOWLEDGE_SEARCH=on` against
 * itself, or against the same server with it off, in the same run:
 *
 * - cold index build: a copy of the fixture without an index file, one search
 *   request, timed until it answers; the server's own log gives the build time
 *   and shows the progress lines it printed on the way;
 * - memory: VmRSS after the same warm-up (GETs and searches) on a restart with
 *   search on (the index open) and on one with it off;
 * - latency: sequential queries of a fixed list, after warm-up queries of another;
 * - throughput: autocannon on rotating queries, in rounds interleaved with GET item on the same server;
 * - PUT: two copies of the 10,000-item fixture, one server with search on and one
 *   with it off, measured in alternation (1 and 16 writers).
 *
 * Every answer of a timed query is checked: as many results as the fixture
 * says match, up to the page size.
 */
const API = '/api/v1/knowledge';
export const SEARCH_LIMIT = 10;
const ON = { KNOWLEDGE_SEARCH: 'on' };
const OFF = { KNOWLEDGE_SEARCH: 'off' };
/** GETs of items in the warm-up, before memory is read (as many with search on and off). */
const WARMUP_GETS = 1_000;

export interface SearchContext {
  docs: Fixture;
  putFixture: Fixture;
  settings: BenchSettings;
  pinning: Pinning;
  workDir: string;
  runTag: string;
  rounds: number;
  connections: number;
  writers: number;
  /** Servers started, for run.ts to stop on an interrupt; complaints go to `problems`. */
  running: Set<Served>;
  problems: string[];
  phase: <T>(name: string, fn: () => Promise<T>) => Promise<T | undefined>;
}

export interface ColdBuild {
  /** Spawn to the first search answered 200. */
  firstSearchMs: number;
  /** The build by the server's log ("search index caught up", its own ms). */
  indexMs: number;
  written: number;
  /** "search index: building" lines logged, and their done/of. */
  progress: string[];
  /** "organization opened": the whole open, repository caches and index. */
  openedMs: number;
  /** First requests cut off by the server's request timeout while the organization opened. */
  retries: number;
  memory: Memory;
}

/** VmRSS after the warm-up, and again after a full garbage collection; VmHWM. */
export type Memory = { rssMiB: number; afterGcMiB: number; hwmMiB: number };

export interface Latency {
  timed: Stats;
  byKind: Record<string, { stats: Stats; medianHits: number }>;
  common: { stats: Stats; medianHits: number };
  prefix: { stats: Stats; medianHits: number };
  /** Items matched per timed query. */
  hits: Stats;
}

export interface SearchResults {
  cold?: ColdBuild;
  /** VmRSS after the warm-up with search on and off; and with it on once the timed queries are done too. */
  memory?: { on: Memory; off: Memory; onAfterQueries: Memory; indexMiB: number };
  latency?: Latency;
  throughput?: { search: LoadResult[]; get: LoadResult[] };
  put?: Record<string, PutRun[]>;
}

const searchPath = (q: string): string => `${API}/search?q=${encodeURIComponent(q)}&limit=${SEARCH_LIMIT}`;
const scattered = (n: number, items: number): number => (n * 7919) % items;

/** Answers with another number of results than the fixture says match (up to the page size). */
const wrongCounts = new Set<string>();

/** One search, timed and checked: 200, and min(hits, page) results (a wrong count is reported, not thrown). */
async function search(url: string, key: string, query: SearchQuery, hits: Record<string, number>): Promise<number> {
  const t = await timedGet(`${url}${searchPath(query.q)}`, key);
  const body = jsonOf<{ data?: { results?: unknown[] } }>(t, `search "${query.q}"`);
  if (t.status !== 200) throw new Error(`search "${query.q}": ${t.status} ${t.body.toString('utf8').slice(0, 300)}`);
  const expected = Math.min(hits[query.q] ?? NaN, SEARCH_LIMIT);
  if (body.data?.results?.length !== expected) wrongCounts.add(`"${query.q}": ${body.data?.results?.length ?? 'no'} results, ${expected} expected`);
  return t.totalMs;
}

/** Retries the first request while the organization opens (the server cuts a request off after 60 s). */
async function firstOk(url: string, key: string, path: string, limitMs: number): Promise<{ retries: number }> {
  const deadline = performance.now() + limitMs;
  for (let retries = 0; ; retries++) {
    const t = await timedGet(`${url}${path}`, key).catch((err: unknown) => ({ status: 0, body: Buffer.from(String(err)) }));
    if (t.status === 200) return { retries };
    if ((t.status !== 0 && t.status !== 408 && t.status !== 503) || performance.now() > deadline) {
      throw new Error(`GET ${path}: ${t.status} ${t.body.toString('utf8').slice(0, 300)}`);
    }
  }
}

/** Our server on `dataDir`, once `probe` answered 200. */
async function start(ctx: SearchContext, args: { dataDir: string; env: Record<string, string>; key: string; probe: string }): Promise<Served & { retries: number }> {
  const served = await startOurServer({ dataDir: args.dataDir, pinning: ctx.pinning, env: args.env });
  ctx.running.add(served);
  const { retries } = await firstOk(served.url, args.key, args.probe, 15 * 60_000).catch(async (err: unknown) => {
    await stop(ctx, served, 'search phase');
    throw err;
  });
  return Object.assign(served, { retries });
}

async function stop(ctx: SearchContext, served: Served, label: string): Promise<void> {
  ctx.problems.push(...serverComplaints(served, label));
  await stopServer(served);
  ctx.running.delete(served);
}

/** The same requests with search on or off (off answers the searches 404): memory is read after them. */
async function warmUp(ctx: SearchContext, url: string, queries: SearchQuery[], on: boolean): Promise<void> {
  const { key, items, hits } = ctx.docs;
  for (let n = 0; n < WARMUP_GETS; n++) {
    const t = await timedGet(`${url}${API}/items/${itemPath(scattered(n, items))}`, key, { keepBody: false });
    if (t.status !== 200) throw new Error(`warm-up GET: ${t.status}`);
  }
  for (const q of queries) {
    if (on) await search(url, key, q, hits);
    else if ((await timedGet(`${url}${searchPath(q.q)}`, key)).status !== 404) throw new Error('search answered with KNOWLEDGE_SEARCH=off');
  }
}

async function memory(pid: number): Promise<Memory> {
  const m = await memoryOf(pid);
  process.kill(pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 2_000));
  const gc = await memoryOf(pid);
  if (!m || !gc) throw new Error(`no /proc/${pid}/status`);
  return { rssMiB: m.rssMiB, afterGcMiB: gc.rssMiB, hwmMiB: gc.hwmMiB };
}

const field = (e: LogEntry | undefined, name: string): number => Number(e?.[name] ?? NaN);

export async function runSearchPhase(ctx: SearchContext): Promise<SearchResults> {
  const out: SearchResults = {};
  const { docs, settings } = ctx;
  const q = benchQueries();
  const dataDir = await copyFixture(docs, join(ctx.workDir, 'search'));
  const indexFile = join(gitdirOf(dataDir), SEARCH_FILE);
  await rm(indexFile, { force: true }); // never there (the fixture was never served): a build from nothing
  const label = `search, ${docs.items} items`;
  out.cold = await ctx.phase(`  ${label}: cold index build`, async () => {
    const served = await start(ctx, { dataDir, env: { ...ON, ...GC_ON_SIGNAL }, key: docs.key, probe: searchPath(q.timed[0]?.q ?? 'x') });
    try {
      const firstSearchMs = performance.now() - served.spawnedAt;
      const caught = await logLine(() => served.output(), 'search index caught up', 2_000);
      const log = serverLog(served.output());
      const building = log.filter((e) => e.msg === 'search index: building');
      await warmUp(ctx, served.url, q.warmup, true);
      const cold: ColdBuild = {
        firstSearchMs,
        indexMs: field(caught, 'ms'),
        written: field(caught, 'written'),
        progress: building.map((e) => (e.done === undefined ? `start ${String(e.items)} of ${String(e.of)}` : `${String(e.done)}/${String(e.of)}`)),
        openedMs: field(log.find((e) => e.msg === 'organization opened'), 'ms'),
        retries: served.retries,
        memory: await memory(served.pid),
      };
      progress(`  cold index build: ${(cold.indexMs / 1000).toFixed(1)} s by the log, first search after ${(firstSearchMs / 1000).toFixed(1)} s; progress: ${cold.progress.join(', ')}`);
      return cold;
    } finally {
      await stop(ctx, served, `${label} (cold)`);
    }
  });
  await ctx.phase(`  ${label}: memory, latency, throughput`, async () => {
    const on = await start(ctx, { dataDir, env: { ...ON, ...GC_ON_SIGNAL }, key: docs.key, probe: searchPath(q.warmup[0]?.q ?? 'x') });
    let rssOn: Memory;
    let rssAfterQueries: Memory;
    try {
      // The ranking index in memory loads in the background after the open (queries use FTS5 until then): the
      // figures are of the server once it has loaded, at most two minutes after the start.
      await logLine(() => on.output(), 'search ranking index ready', 120_000);
      await warmUp(ctx, on.url, q.warmup, true);
      rssOn = await memory(on.pid);
      const timed: number[] = [];
      const byKind = new Map<string, { ms: number[]; hits: number[] }>();
      for (const query of q.timed) {
        const t = await search(on.url, docs.key, query, docs.hits);
        timed.push(t);
        const k = byKind.get(query.kind) ?? { ms: [], hits: [] };
        k.ms.push(t);
        k.hits.push(docs.hits[query.q] ?? NaN);
        byKind.set(query.kind, k);
      }
      const common: number[] = [];
      for (const query of q.common) common.push(await search(on.url, docs.key, query, docs.hits));
      const prefix: number[] = [];
      for (const query of q.prefix) prefix.push(await search(on.url, docs.key, query, docs.hits));
      out.latency = {
        timed: stats(timed),
        byKind: Object.fromEntries([...byKind].map(([kind, k]) => [kind, { stats: stats(k.ms), medianHits: stats(k.hits).median }])),
        common: { stats: stats(common), medianHits: stats(q.common.map((x) => docs.hits[x.q] ?? NaN)).median },
        prefix: { stats: stats(prefix), medianHits: stats(q.prefix.map((x) => docs.hits[x.q] ?? NaN)).median },
        hits: stats(q.timed.map((x) => docs.hits[x.q] ?? NaN)),
      };
      rssAfterQueries = await memory(on.pid);
      progress(`  search latency, 2 words: p50 ${out.latency.timed.median.toFixed(2)} ms, p95 ${out.latency.timed.p95.toFixed(2)} ms (${timed.length} queries)`);
      const rotating = [...q.warmup, ...q.timed];
      const tp = { search: [] as LoadResult[], get: [] as LoadResult[] };
      for (let round = 1; round <= ctx.rounds; round++) {
        for (const which of round % 2 === 1 ? (['get', 'search'] as const) : (['search', 'get'] as const)) {
          if (which === 'get') {
            tp.get.push(await measureGet({ served: on, key: docs.key, items: docs.items, connections: ctx.connections, durationS: settings.durationS, warmupS: settings.warmupS }));
          } else {
            let n = 0;
            const next = () => ({ method: 'GET' as const, path: searchPath((rotating[n++ % rotating.length] as SearchQuery).q) });
            const common = { url: on.url, key: docs.key, connections: ctx.connections, next, serverPid: on.pid };
            await runLoad({ ...common, durationS: settings.warmupS });
            tp.search.push(await runLoad({ ...common, durationS: settings.durationS }));
          }
          progress(`  round ${round}, ${which === 'get' ? 'GET item' : 'search  '}: ${describeLoad(tp[which][tp[which].length - 1] as LoadResult)}`);
        }
      }
      out.throughput = tp;
    } finally {
      await stop(ctx, on, `${label} (search on)`);
    }
    const off = await start(ctx, { dataDir, env: { ...OFF, ...GC_ON_SIGNAL }, key: docs.key, probe: `${API}/items/${itemPath(0)}` });
    try {
      await warmUp(ctx, off.url, q.warmup, false);
      out.memory = { on: rssOn, off: await memory(off.pid), onAfterQueries: rssAfterQueries, indexMiB: (await stat(indexFile)).size / 1048576 };
      const { on: m1, off: m0 } = out.memory;
      progress(`  VmRSS search on ${m1.rssMiB.toFixed(0)} MiB (${m1.afterGcMiB.toFixed(0)} after a full GC), off ${m0.rssMiB.toFixed(0)} MiB (${m0.afterGcMiB.toFixed(0)}); index file ${out.memory.indexMiB.toFixed(1)} MiB`);
    } finally {
      await stop(ctx, off, `${label} (search off)`);
    }
  });
  await rm(dataDir, { recursive: true, force: true });
  if (wrongCounts.size > 0) ctx.problems.push(`search answered another number of results than the fixture holds: ${[...wrongCounts].slice(0, 10).join('; ')}`);
  out.put = await ctx.phase(`  search on vs off: PUT, 1 and ${ctx.writers} writers (${ctx.putFixture.items} items)`, () => putOnOff(ctx));
  return out;
}

/** Two servers on two copies of the same fixture, search on and off, written to in alternation round by round. */
async function putOnOff(ctx: SearchContext): Promise<Record<string, PutRun[]>> {
  const f = ctx.putFixture;
  const runs: Record<string, PutRun[]> = {};
  const servers: Record<string, { served: Served; gitdir: string }> = {};
  try {
    for (const [mode, env] of [['on', ON], ['off', OFF]] as const) {
      const dataDir = await copyFixture(f, join(ctx.workDir, `search-put-${mode}`));
      servers[mode] = { served: await start(ctx, { dataDir, env, key: f.key, probe: `${API}/items/${itemPath(0)}` }), gitdir: gitdirOf(dataDir) };
      // Searched once, so the writes keep a loaded ranking index in step too, as a searched organization's do.
      if (mode === 'on') await loadRankingIndex(servers[mode].served, f.key, 60_000);
    }
    for (let round = 1; round <= ctx.rounds; round++) {
      for (const connections of [1, ctx.writers]) {
        for (const mode of round % 2 === 1 ? ['on', 'off'] : ['off', 'on']) {
          const s = servers[mode] as { served: Served; gitdir: string };
          const p = await measurePut({ served: s.served, key: f.key, items: f.items, connections, durationS: ctx.settings.durationS, gitdir: s.gitdir, tag: `${ctx.runTag}-search-${mode}-${connections}-${round}` });
          (runs[`${mode}-${connections}`] ??= []).push(p);
          progress(`  round ${round}, search ${mode}, ${connections} writer(s): ${p.load.okPerSecond.toFixed(1)} PUT/s, p99 ${p.load.latencyMs.p99} ms, ${p.commits} commits for ${p.load.ok} 2xx`);
        }
      }
    }
  } finally {
    for (const [mode, s] of Object.entries(servers)) await stop(ctx, s.served, `${f.items} items, search ${mode}`);
  }
  return runs;
}
