/**
 * The search engine's own CPU per query, in this process, without HTTP or SQLite: the in-memory ranking index
 * (rankIndex.ts) built from the search bench's corpus, the bench's timed two-word queries ranked (limit 10)
 * and their page's snippets made, per kind of query. What searchCost.ts measures over HTTP, cut to the part
 * search owns, with a figure per step, so a change to ranking or snippets is judged in seconds.
 *
 *   npm run build && node dist/test/bench/rankCost.js [--items 50000] [--bytes 2048] [--passes 5]
 *
 * Run it built (`npm run build && node dist/test/bench/rankCost.js`): under tsx an imported binding read in a
 * hot loop costs several times what it does in the built code (a tokenizer pass measured 25 µs under tsx, 7 µs
 * built), which misjudges changes that move such reads.
 *
 * Prints µs per query for ranking and for the ten snippets (from the bodies' bytes, as the server makes them, not
 * counting the read from SQLite), the median of `--passes` passes over all the
 * queries (each pass in the same order), per kind and over the whole mix.
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
