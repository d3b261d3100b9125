/**
 * Search's costliest queries over HTTP, one at a time, on the search bench's fixture (50,000 items of ~2 KB, its
 * ranking index loaded): the most any reader can make one request cost within the query rules (at most 16 words
 * or phrases, prefixes of 3 letters or more, 500 characters; limit 100). Each query is sent three times; prints
 * the status, the results and the three times (the first finds caches cold).
 *
 *   npm run build && npx tsx test/bench/searchWorst.ts
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { copyFixture, ensureFixture } from './fixtures.js';
import { loadRankingIndex, startAndProbe, stopServer } from './ours.js';
import { UNPINNED } from './machine.js';
import { loadSettings } from './settings.js';
import { timedGet } from './timing.js';
import { vocabulary } from './corpus.js';

const settings = loadSettings();
const docs = await ensureFixture({ items: settings.sizes.search, hotVersions: 0, contentBytes: settings.searchItemBytes, cacheDir: join(settings.outDir, 'fixtures') });
const dataDir = await copyFixture(docs, join(settings.outDir, 'work', 'searchworst'));
const { served } = await startAndProbe({ dataDir, pinning: UNPINNED, key: docs.key, env: { KNOWLEDGE_SEARCH: 'on' } });
const path = (q: string) => `/api/v1/knowledge/search?q=${encodeURIComponent(q)}&limit=100`;
// The figures are of the server once its ranking index is loaded (the first search starts the load).
await loadRankingIndex(served, docs.key, 180_000);
// The corpus's most frequent words (ranks 3-18: in 35-100% of the items) and 3-letter prefixes of mid-frequency ones.
const v = vocabulary();
const common = v.slice(3, 19);
const prefixes = v.slice(60, 200).map((w) => w.slice(0, 3)).filter((p, i, a) => a.indexOf(p) === i).slice(0, 16);
const queries: Record<string, string> = {
  'one common word': common[0] as string,
  '16 common words': common.join(' '),
  'a 3-letter prefix': `${prefixes[0]}*`,
  '16 3-letter prefixes': prefixes.map((p) => `${p}*`).join(' '),
  'phrase of 16 common words': `"${common.join(' ')}"`,
  '8 common phrases of 2': Array.from({ length: 8 }, (_, i) => `"${common[i]} ${common[i + 1]}"`).join(' '),
  'common word minus 15 common words': `${common[0]} ${common.slice(1).map((w) => `-${w}`).join(' ')}`,
  '15 prefixes and a common word': `${common[0]} ${prefixes.slice(0, 15).map((p) => `${p}*`).join(' ')}`,
  'prefix of a common word': `${(common[0] as string).slice(0, 3)}*`,
};
for (const [label, q] of Object.entries(queries)) {
  const times: number[] = [];
  let status = 0;
  let n = 0;
  for (let r = 0; r < 3; r++) {
    const t = await timedGet(`${served.url}${path(q)}`, docs.key);
    status = t.status;
    n = (JSON.parse(t.body.toString('utf8')) as { data?: { results?: unknown[] } }).data?.results?.length ?? -1;
    times.push(t.totalMs);
  }
  console.log(`${label}: ${status}, ${n} results, ${times.map((t) => t.toFixed(0)).join(' / ')} ms (q ${q.length} chars)`);
}
await stopServer(served);
await rm(dataDir, { recursive: true, force: true });
