/**
 * The ranking index's CPU per query against another checkout's, in one process: both indexes built from the
 * search bench's corpus, each of the bench's timed two-word queries ranked by both (which goes first alternates
 * by query and by pass), each ranking followed by its page's ten snippets as the server makes them (their
 * allocations and the caches they take from the lists count, which rankCost.ts --compare leaves out).
 *
 *   npx tsx test/bench/rankBaseline.ts <checkout> [--items 50000] [--bytes 2048] [--passes 6]
 *
 * `<checkout>`: a tree of this project at another commit (`git archive <commit> | tar -x -C <dir>`, with
 * node_modules linked in). Prints CPU µs per ranking (user + system of the process, so the collector's threads
 * count), the median of the passes, per kind of query, for both and their ratio.
 */
import { resolve } from 'node:path';
import { snippetOf } from '../../src/storage/search/ftsSnippet.js';
import { RankIndex } from '../../src/storage/search/rankIndex.js';
import { rankPlain } from '../../src/storage/search/rankQuery.js';
import { benchQueries, docContent } from './corpus.js';
import { itemPath } from './fixtures.js';
import { scriptOptions } from './settings.js';

const other = process.argv[2];
if (!other || other.startsWith('--')) throw new Error('usage: rankBaseline.ts <checkout> [--passes 6]');
const options = scriptOptions(process.argv.slice(3));
const ITEMS = options.number('--items', 50_000);
const BYTES = options.number('--bytes', 2048);
const PASSES = options.number('--passes', 6);

interface Engine {
  index: RankIndex;
  rank: typeof rankPlain;
}
const root = resolve(other);
const before = (await import(`${root}/src/storage/search/rankIndex.js`)) as { RankIndex: typeof RankIndex };
const beforeRank = (await import(`${root}/src/storage/search/rankQuery.js`)) as { rankPlain: typeof rankPlain };
const engines: Engine[] = [
  { index: new before.RankIndex(), rank: beforeRank.rankPlain },
  { index: new RankIndex(), rank: rankPlain },
];
const texts: string[] = [];
for (let i = 0; i < ITEMS; i++) {
  const text = docContent(i, BYTES);
  texts.push(text);
  for (const e of engines) e.index.put({ path: itemPath(i), text, need: 0, rowid: i + 1 });
}

const queries = benchQueries().timed.map((q) => ({ kind: q.kind, words: q.q.split(' ') }));
const kinds = ['all', ...new Set(queries.map((q) => q.kind))];
const runs = engines.map(() => new Map<string, number[]>(kinds.map((k) => [k, []])));
let check = 0;
for (let pass = 0; pass < PASSES; pass++) {
  const spent = engines.map(() => new Map<string, { cpu: number; n: number }>(kinds.map((k) => [k, { cpu: 0, n: 0 }])));
  for (const [i, q] of queries.entries()) {
    for (const e of (i + pass) % 2 === 0 ? [0, 1] : [1, 0]) {
      const engine = engines[e] as Engine;
      const start = process.cpuUsage();
      const rows = engine.rank(engine.index, { include: q.words, exclude: [], needs: [0], limit: 11, offset: 0 });
      const cpu = process.cpuUsage(start);
      for (const row of rows.slice(0, 10)) check += snippetOf(texts[row.id - 1] as string, q.words).length;
      for (const k of ['all', q.kind]) {
        const into = spent[e]?.get(k) as { cpu: number; n: number };
        into.cpu += cpu.user + cpu.system;
        into.n++;
      }
    }
  }
  spent.forEach((byKind, e) => byKind.forEach((s, k) => runs[e]?.get(k)?.push(s.cpu / s.n)));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`| kind | ${other} | this tree | ratio |`);
console.log('|---|---|---|---|');
for (const k of kinds) {
  const [b, a] = runs.map((r) => median(r.get(k) as number[])) as [number, number];
  console.log(`| ${k} | ${b.toFixed(1)} | ${a.toFixed(1)} | ${(a / b).toFixed(2)} |`);
}
console.log(`(CPU µs per ranking, ten snippets after each, median of ${PASSES} passes; snippet checksum ${check})`);
