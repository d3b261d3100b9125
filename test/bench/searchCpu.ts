/**
 * CPU per query of the search index itself, without HTTP or a server: the
 * real SearchIndex over the search fixture's corpus (corpus.ts, 50,000 items
 * of ~2 KB unless N says otherwise), asked the bench's rotating two-word mix
 * (the 500 queries the throughput figure rotates over). CPU time, not wall
 * time, so a busy machine moves the figure far less than a throughput run.
 *
 *   N=50000 npx tsx test/bench/searchCpu.ts [--rounds 3] [--limit 10] [--put 200]
 *
 * Rounds alternate between the engines (ENGINE=fts,rank by default): FTS5 alone, as every query went
 * before the in-memory ranking index, and the ranking index (plain-word queries; the rest still FTS5).
 *
 * The index file is kept in `.tmp/bench/searchcpu/` (its build takes a minute)
 * and reopened by later runs. `PROFILE=1` writes a CPU profile of the timed rounds alone (not the load, not the
 * common-word and prefix queries) to `.tmp/bench/profiles/searchcpu-<time>.cpuprofile`. `--put n` also times n single-item batches
 * applied to the index (the cost a group commit pays with search on): the
 * CPU staged while the pack is fsynced, and the CPU of the commit a writer
 * still waits for (`STAGE=0`: everything after the ref update, as before).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createLogger } from '../../src/common/log.js';
import { parseSearchQuery } from '../../src/domain/searchQuery.js';
import { readableNeeds, readNeed } from '../../src/domain/search.js';
import type { IndexEntry } from '../../src/storage/repo/itemIndex.js';
import { SearchIndex, type SearchSource } from '../../src/storage/search/searchIndex.js';
import { textRecord } from '../support/records.js';
import { benchQueries, docContent } from './corpus.js';
import { itemPath } from './fixtures.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number): number => {
  const at = argv.indexOf(name);
  return at === -1 ? dflt : Number(argv[at + 1]);
};
const N = Number(process.env.N ?? 50_000);
const ROUNDS = opt('--rounds', 3);
const LIMIT = opt('--limit', 10);
const PUTS = opt('--put', 0);
const BYTES = 2048;

const entries = new Map<string, IndexEntry>();
const contents = new Map<string, string>();
for (let i = 0; i < N; i++) {
  const path = itemPath(i);
  entries.set(path, { record: textRecord(path), blobOid: `blob-${i}-v1`, recordOid: `rec-${i}` });
}
let head = `head-${N}`;
const source: SearchSource = {
  get headCommit() {
    return head;
  },
  entries: () => entries.values(),
  get: (path) => entries.get(path),
  folderRule: () => undefined,
  readContent: async (entry) => {
    const known = contents.get(entry.blobOid);
    if (known !== undefined) return known;
    const i = Number(/^blob-(\d+)-/.exec(entry.blobOid)?.[1]);
    return docContent(i, BYTES);
  },
};

const dir = join(process.cwd(), '.tmp', 'bench', 'searchcpu');
mkdirSync(dir, { recursive: true });
const logger = createLogger({ level: process.env.LOG === 'info' ? 'info' : 'warn' });
const t0 = performance.now();
const index = await SearchIndex.open({ file: join(dir, `${process.env.TAG ?? "index"}-${N}.sqlite`), source, readNeed, logger, orgId: 'bench' });
console.log(`open: ${(performance.now() - t0).toFixed(0)} ms`);
// The in-memory ranking index loads in the background after open: its time and what it adds to the process.
const mib = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;
const memBefore = process.memoryUsage();
const t1 = performance.now();
await index.rankLoaded();
(globalThis as { gc?: () => void }).gc?.();
const memAfter = process.memoryUsage();
console.log(`ranking index loaded: ${(performance.now() - t1).toFixed(0)} ms; RSS ${mib(memBefore.rss)} -> ${mib(memAfter.rss)}, heap ${mib(memBefore.heapUsed)} -> ${mib(memAfter.heapUsed)}, array buffers ${mib(memBefore.arrayBuffers)} -> ${mib(memAfter.arrayBuffers)}`);
/** Which engines the rounds alternate over: FTS5 alone (the path before the ranking index), the ranking index, or both. */
const ENGINES = (process.env.ENGINE ?? 'fts,rank').split(',');

const q = benchQueries();
const rotating = [...q.warmup, ...q.timed];
const needs = readableNeeds('reader');

async function timeQueries(list: typeof rotating): Promise<{ cpuMs: number; byKind: Map<string, number[]> }> {
  const byKind = new Map<string, number[]>();
  const c0 = process.cpuUsage();
  for (const query of list) {
    const c = process.cpuUsage();
    // As the API asks: one hit more than the page, to know whether a next one exists, without its snippet.
    await index.search({ terms: parseSearchQuery(query.q), needs, limit: LIMIT + 1, offset: 0, snippets: LIMIT });
    const d = process.cpuUsage(c);
    const ms = (d.user + d.system) / 1000;
    byKind.set(query.kind, [...(byKind.get(query.kind) ?? []), ms]);
  }
  const d = process.cpuUsage(c0);
  return { cpuMs: (d.user + d.system) / 1000, byKind };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

for (const engine of ENGINES) {
  index.useRank = engine === 'rank';
  await timeQueries(q.warmup); // warm the page cache and the compiled statements
}
// The rounds alone, profiled when asked: the load and FTS5's build would otherwise fill the profile.
const profiler = process.env.PROFILE ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
  await profiler.post('Profiler.start');
}
for (let round = 1; round <= ROUNDS; round++) {
  for (const engine of ENGINES) {
    index.useRank = engine === 'rank';
    const { cpuMs, byKind } = await timeQueries(rotating);
    const kinds = [...byKind].map(([k, ms]) => `${k} ${mean(ms).toFixed(2)}/${median(ms).toFixed(2)}`).join(', ');
    console.log(`round ${round} ${engine}: ${(cpuMs / rotating.length).toFixed(3)} ms CPU per query (${rotating.length} queries); mean/median by kind: ${kinds}`);
  }
}
if (profiler) {
  const { profile } = await profiler.post('Profiler.stop');
  const profiles = join(process.cwd(), '.tmp', 'bench', 'profiles');
  mkdirSync(profiles, { recursive: true });
  const file = join(profiles, `searchcpu-${Date.now()}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  console.log(`CPU profile of the rounds: ${file}`);
}
for (const engine of ENGINES) {
  index.useRank = engine === 'rank';
  for (const [name, list] of [['common word', q.common], ['prefix', q.prefix]] as const) {
    const { cpuMs } = await timeQueries(list);
    console.log(`${engine} ${name}: ${(cpuMs / list.length).toFixed(3)} ms CPU per query`);
  }
}
index.useRank = true;
// What the queries left behind in the process, after a full GC (with --expose-gc): the ranking index and whatever
// its queries keep. Last, as the GC slowed the queries timed after it.
(globalThis as { gc?: () => void }).gc?.();
const memRounds = process.memoryUsage();
console.log(`after the queries: RSS ${mib(memRounds.rss)}, heap ${mib(memRounds.heapUsed)}, array buffers ${mib(memRounds.arrayBuffers)}`);

if (PUTS > 0) {
  // Single-item batches, as one writer produces them: an update of an existing item each. Staged as the
  // write pipeline stages them (while the pack is fsynced), then committed (after the ref update): the
  // commit is what a writer still waits for; `published` alone (STAGE=0) is the path before staging.
  const stage = process.env.STAGE !== '0';
  const staged: number[] = [];
  const committed: number[] = [];
  const cpu = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  for (let n = 0; n < PUTS; n++) {
    const i = (n * 7919) % N;
    const path = itemPath(i);
    const old = entries.get(path) as IndexEntry;
    const blobOid = `blob-${i}-v${n + 2}`;
    const text = docContent(i + N * (n + 1), BYTES);
    contents.set(blobOid, text);
    const parent = head;
    const next = `head-${N}-put-${n}-${Date.now()}`;
    const commits = [{ commitId: next, parent, item: { path, id: old.record.id, action: 'update' as const }, message: 'put', author: { name: 'bench', email: 'bench' }, timestamp: 0 }];
    const written = new Map([[blobOid, text]]);
    const entry = { ...old, blobOid };
    const c0 = cpu();
    if (stage) {
      const state = { get: (p: string) => (p === path ? entry : entries.get(p)), hasEntriesUnder: () => true, folderRule: () => undefined };
      const work = await index.stage({ parent, head: next, root: 'root', commits, written, state, diskBusy: Promise.resolve(true) });
      const c1 = cpu();
      entries.set(path, entry);
      head = next;
      if (!work) throw new Error('nothing staged');
      work.commit();
      staged.push(c1 - c0);
      committed.push(cpu() - c1);
    } else {
      entries.set(path, entry);
      head = next;
      await index.published({ parent, head, root: 'root', commits, written, flushed: { objects: 2, packs: 1, names: new Map() } });
      committed.push(cpu() - c0);
    }
  }
  const describe = (xs: number[]): string => `mean ${mean(xs).toFixed(3)} ms, median ${median(xs).toFixed(3)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
  if (stage) console.log(`put, CPU per single-item batch: staged (during the fsync) ${describe(staged)}; commit (after the ref update) ${describe(committed)}`);
  else console.log(`put, CPU per single-item batch, all after the ref update: ${describe(committed)}`);
}
index.close();
