/**
 * What the search indexes' SQLite page caches hold, many organizations together: each index file is opened by the
 * one WebAssembly SQLite of the process, whose heap is at most 2 GiB and never shrinks.
 *
 * One index file of `--items` notes of ~2 KB (the bench corpus) is built once, copied for each of `--orgs`
 * organizations, and each copy is opened in turn through `SearchDb` with a budget of `--budget-mb` for all of
 * them (KNOWLEDGE_SEARCH_CACHE_MB; `0`: none, each cache at most 16 MiB as before the budget), then used as
 * `--workload` says:
 * - `crash` (default): `PRAGMA quick_check`, what every index gets at the first open after a crash of the server
 *   (it reads every page);
 * - `search`: the catch-up's look at every row, 20 phrase and prefix queries (those go to FTS5) with their
 *   snippets, and 10 writes in one transaction.
 * Every 10 organizations it prints the memory outside V8's heap (`external`: the WebAssembly heap is in it) and
 * the RSS; it stops at the first error, which it prints. At the end: the time of a query in the last 20 opened
 * (the smallest caches).
 *
 *   npx tsx test/bench/searchPageCaches.ts [--orgs 160] [--items 5000] [--budget-mb 256] [--workload crash|search]
 */
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { silentLogger } from '../../src/common/log.js';
import { PageCaches } from '../../src/storage/search/pageCaches.js';
import { SearchDb } from '../../src/storage/search/searchDb.js';
import { ROOT } from '../support/child.js';
import { docContent, prefixQueries, twoWordQueries } from './corpus.js';
import { sampleAt } from './timing.js';

const { values } = parseArgs({
  options: {
    orgs: { type: 'string', default: '160' },
    items: { type: 'string', default: '5000' },
    'budget-mb': { type: 'string', default: '256' },
    workload: { type: 'string', default: 'crash' },
  },
});
const orgs = Number(values.orgs);
const items = Number(values.items);
const budgetMb = Number(values['budget-mb']);
const workload = values.workload;
if (!(orgs > 0 && items > 0 && budgetMb >= 0) || (workload !== 'crash' && workload !== 'search')) {
  throw new Error('usage: --orgs N --items N --budget-mb N (0: none) --workload crash|search');
}

const MIB = 1024 * 1024;
const dir = join(ROOT, '.tmp/bench/pagecaches');
mkdirSync(dir, { recursive: true });
const base = join(dir, `base-${items}.sqlite`);
if (!existsSync(base)) {
  const started = performance.now();
  const building = `${base}.building`;
  SearchDb.remove(building);
  const db = SearchDb.open(building, silentLogger, new PageCaches(16 * MIB));
  db.transaction(() => {
    for (let i = 0; i < items; i++) db.put({ path: `notes/${Math.floor(i / 1000)}/${i}.md`, blob: `b${i}`, need: 0, text: docContent(i, 2048) });
  });
  db.checkpoint();
  db.close();
  renameSync(building, base);
  console.log(`built ${base} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

// No budget: larger than 16 MiB for every index, so each keeps the most one may (as before the budget).
const caches = new PageCaches((budgetMb === 0 ? 16 * (orgs + 1) : budgetMb) * MIB);
const queries = [...twoWordQueries(10, 1).map((q) => `"${q.q}"`), ...prefixQueries(10).map((q) => q.q)];
const start = { external: process.memoryUsage().external, rss: process.memoryUsage().rss };
const mib = (bytes: number): string => (bytes / MIB).toFixed(0);
const opened: SearchDb[] = [];
const queryMs: number[][] = [];
let failed: string | null = null;
console.log(`${orgs} organizations of ${items} items, budget ${budgetMb === 0 ? 'none (16 MiB each)' : `${budgetMb} MiB`}, workload ${workload}`);
for (let o = 0; o < orgs && failed === null; o++) {
  const file = join(dir, `org-${o}.sqlite`);
  SearchDb.remove(file);
  copyFileSync(base, file);
  try {
    const db = SearchDb.open(file, silentLogger, caches);
    opened.push(db);
    const times: number[] = [];
    if (workload === 'crash') {
      if (!db.quickCheck()) throw new Error('quick_check failed');
    } else {
      db.indexed();
      for (const match of queries) {
        const t = performance.now();
        const rows = db.search({ match, pathMatch: match, needs: [0], limit: 10, offset: 0 });
        for (const row of rows) db.snippet(match, row.id);
        times.push(performance.now() - t);
      }
      db.transaction(() => {
        for (let i = 0; i < 10; i++) db.put({ path: `new/${i}.md`, blob: `n${i}`, need: 0, text: docContent(items + i, 2048) });
      });
    }
    queryMs.push(times);
  } catch (err) {
    failed = `organization ${o + 1}: ${String(err)}`;
  }
  if ((o + 1) % 10 === 0 || failed !== null) {
    const now = process.memoryUsage();
    console.log(`${String(o + 1).padStart(4)} open: ${String(caches.perIndexKib).padStart(5)} KiB each; external +${mib(now.external - start.external)} MiB, RSS ${mib(now.rss)} MiB`);
  }
}
if (failed !== null) console.log(`FAILED at ${failed}`);
const last = queryMs.slice(-20).flat().sort((a, b) => a - b);
if (last.length > 0) console.log(`a query in the last 20 organizations opened: p50 ${sampleAt(last, 0.5).toFixed(2)} ms, p95 ${sampleAt(last, 0.95).toFixed(2)} ms (${last.length} queries)`);
for (const db of opened) {
  try {
    db.close();
  } catch {
    // out of memory: nothing to save, the copies are removed below
  }
}
for (let o = 0; o < orgs; o++) SearchDb.remove(join(dir, `org-${o}.sqlite`));
rmSync(`${base}.building`, { force: true });
