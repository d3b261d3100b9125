/**
 * The search engine's own CPU per query, in this process, without HTTP or SQLite: the in-memory ranking index
 * (rankIndex.ts) built from the search bench's corpus, the bench's timed two-word queries ranked (limit 10)
 * and their page's snippets made, per kind of query. What searchCost.ts measures over HTTP, cut to the part
 * search owns, with a figure per step, so a change to ranking or snippets is judged in seconds.
 *
 *   npm run build && node dist/test/bench/rankCost.js [--items 50000] [--bytes 2048] [--passes 5] [--compare] [--check]
 *
 * Run it built: under tsx an imported binding read in a hot loop costs several times what it does in the built
 * code (a tokenizer pass measured 25 µs under tsx, 7 µs built), which misjudges changes that move such reads.
 *
 * Prints µs per query for ranking and for the ten snippets (from the bodies' bytes, as the server makes them, not
 * counting the read from SQLite), the median of `--passes` passes over all the queries (each pass in the same
 * order), per kind and over the whole mix. With `--compare`, then CPU µs per
 * query of ranking alone with and without the lists' top documents (rankTop.ts), the two alternating query by
 * query (which goes first alternates by query and by pass), and the index's bytes once top documents are made. With
 * `--check`, every query's rows with top documents are compared to the walk's (exit 1 when one differs). With
 * `--per-query`, each query that takes top documents is timed both ways on its own (`--reps` runs in a row, warm, the
 * two alternating, the median of three): what a rule for when to take them could win at best, against always.
 */
import { performance } from 'node:perf_hooks';
import { snippetOfStored } from '../../src/storage/search/ftsSnippet.js';
import { RankIndex } from '../../src/storage/search/rankIndex.js';
import { rankPlain } from '../../src/storage/search/rankQuery.js';
import { benchQueries, docContent } from './corpus.js';
import { itemPath } from './fixtures.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const ITEMS = options.number('--items', 50_000);
const BYTES = options.number('--bytes', 2048);
const PASSES = options.number('--passes', 5);
const COMPARE = process.argv.includes('--compare');
const CHECK = process.argv.includes('--check');
const PER_QUERY = process.argv.includes('--per-query');
const REPS = options.number('--reps', 30);
const LIMIT = 10;

/** The bodies as the server reads them for snippets: UTF-8 bytes (SearchDb.bodies). */
const stored: Buffer[] = [];
const texts: string[] = [];
const rank = new RankIndex();
const t0 = performance.now();
for (let i = 0; i < ITEMS; i++) {
  const text = docContent(i, BYTES);
  texts.push(text);
  stored.push(Buffer.from(text));
  rank.put({ path: itemPath(i), text, need: 0, rowid: i + 1 });
}
console.log(`built ${ITEMS} items of ~${BYTES} bytes in ${((performance.now() - t0) / 1000).toFixed(1)} s; heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`);

const queries = benchQueries().timed.map((q) => ({ kind: q.kind, words: q.q.split(' ') }));
const kinds = [...new Set(queries.map((q) => q.kind))];
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const perKind = new Map<string, { rank: number[]; snippets: number[] }>(['all', ...kinds].map((k) => [k, { rank: [], snippets: [] }]));
let check = 0;
for (let pass = 0; pass < PASSES; pass++) {
  const spent = new Map<string, { rank: number; snippets: number; n: number }>(['all', ...kinds].map((k) => [k, { rank: 0, snippets: 0, n: 0 }]));
  for (const q of queries) {
    const a = performance.now();
    const rows = rankPlain(rank, { include: q.words, exclude: [], needs: [0], limit: LIMIT + 1, offset: 0 });
    const b = performance.now();
    for (const row of rows.slice(0, LIMIT)) check += snippetOfStored(stored[row.id - 1] as Buffer, () => texts[row.id - 1] as string, q.words).length;
    const c = performance.now();
    for (const k of ['all', q.kind]) {
      const s = spent.get(k) as { rank: number; snippets: number; n: number };
      s.rank += b - a;
      s.snippets += c - b;
      s.n++;
    }
  }
  for (const [k, s] of spent) {
    const into = perKind.get(k) as { rank: number[]; snippets: number[] };
    into.rank.push((s.rank / s.n) * 1000);
    into.snippets.push((s.snippets / s.n) * 1000);
  }
}
console.log(`| kind | queries | rank µs | snippets µs | together µs |`);
console.log(`|---|---|---|---|---|`);
for (const [k, v] of perKind) {
  const r = median(v.rank);
  const s = median(v.snippets);
  console.log(`| ${k} | ${k === 'all' ? queries.length : queries.filter((q) => q.kind === k).length} | ${r.toFixed(1)} | ${s.toFixed(1)} | ${(r + s).toFixed(1)} |`);
}
console.log(`(median of ${PASSES} passes; checksum ${check})`);

if (CHECK) {
  let differ = 0;
  for (const q of queries) {
    const query = { include: q.words, exclude: [], needs: [0], limit: LIMIT + 1, offset: 0 };
    if (JSON.stringify(rankPlain(rank, query)) !== JSON.stringify(rankPlain(rank, query, undefined, { topDocs: false }))) {
      differ++;
      console.log(`differs: ${q.words.join(' ')}`);
    }
  }
  console.log(`check: ${queries.length - differ} of ${queries.length} queries rank the same rows with top documents as without`);
  if (differ > 0) process.exitCode = 1;
}

if (COMPARE) {
  /** CPU µs of one query's ranking (user + system: this process only). */
  const cpu = (words: string[], topDocs: boolean): number => {
    const before = process.cpuUsage();
    rankPlain(rank, { include: words, exclude: [], needs: [0], limit: LIMIT + 1, offset: 0 }, undefined, { topDocs });
    const spent = process.cpuUsage(before);
    return spent.user + spent.system;
  };
  const runs = new Map<string, { walk: number[]; top: number[] }>(['all', ...kinds].map((k) => [k, { walk: [], top: [] }]));
  for (let pass = 0; pass < PASSES; pass++) {
    const spent = new Map<string, { walk: number; top: number; n: number }>(['all', ...kinds].map((k) => [k, { walk: 0, top: 0, n: 0 }]));
    for (const [i, q] of queries.entries()) {
      // The second of the two finds the lists in the CPU's caches: each goes first for half the queries of a pass.
      const first = (pass + i) % 2 === 0;
      const a = cpu(q.words, first);
      const b = cpu(q.words, !first);
      for (const k of ['all', q.kind]) {
        const into = spent.get(k) as { walk: number; top: number; n: number };
        into.top += first ? a : b;
        into.walk += first ? b : a;
        into.n++;
      }
    }
    for (const [k, s] of spent) {
      const into = runs.get(k) as { walk: number[]; top: number[] };
      into.walk.push(s.walk / s.n);
      into.top.push(s.top / s.n);
    }
  }
  console.log(`\n| kind | rank CPU µs, walk only | with top documents | ratio |`);
  console.log(`|---|---|---|---|`);
  for (const [k, v] of runs) {
    const w = median(v.walk);
    const t = median(v.top);
    console.log(`| ${k} | ${w.toFixed(1)} | ${t.toFixed(1)} | ${(t / w).toFixed(2)} |`);
  }
  console.log(`(CPU time, median of ${PASSES} passes; index ${(rank.bytes / 2 ** 20).toFixed(1)} MiB of typed arrays with top documents; heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB)`);
}

if (PER_QUERY) {
  /** Wall µs of one ranking of `words`, the mean of REPS in a row (the lists warm in the CPU's caches after the first). */
  const time = (words: string[], topDocs: boolean): number => {
    const started = performance.now();
    for (let r = 0; r < REPS; r++) rankPlain(rank, { include: words, exclude: [], needs: [0], limit: LIMIT + 1, offset: 0 }, undefined, { topDocs });
    return ((performance.now() - started) / REPS) * 1000;
  };
  const medianOf3 = (f: () => number): number => median([f(), f(), f()]);
  let top = 0;
  let walk = 0;
  let best = 0;
  const slower: string[] = [];
  let taking = 0;
  for (const [i, q] of queries.entries()) {
    const stats = { scored: 0, topDocs: false };
    rankPlain(rank, { include: q.words, exclude: [], needs: [0], limit: LIMIT + 1, offset: 0 }, stats);
    if (!stats.topDocs) continue;
    taking++;
    // Which goes first alternates by query.
    const both = (first: boolean): [number, number] => {
      const a = medianOf3(() => time(q.words, first));
      return first ? [a, medianOf3(() => time(q.words, false))] : [medianOf3(() => time(q.words, true)), a];
    };
    const [t, w] = both(i % 2 === 0);
    top += t;
    walk += w;
    best += Math.min(t, w);
    if (w < t) slower.push(`${q.words.join(' ')} (${q.words.map((x) => rank.liveCount(x)).join(' and ')} postings): ${t.toFixed(0)} against ${w.toFixed(0)} µs`);
  }
  console.log(`\n${taking} of ${queries.length} queries take top documents; µs per query, warm, summed over them: always top documents ${top.toFixed(0)}, walk only ${walk.toFixed(0)}, the better of the two for each query ${best.toFixed(0)} (no rule can do better: ${(100 * (1 - best / top)).toFixed(1)}% less than always)`);
  console.log(`the walk was faster for ${slower.length}: ${slower.join('; ')}`);
}
