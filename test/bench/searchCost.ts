/**
 * Server CPU per search request over HTTP, against GET item on the same server: the throughput figure of
 * `npm run bench`'s search phase (rotating two-word queries, limit 10) without the rest of it. CPU seconds from
 * /proc per 2xx answer move far less than req/s on a busy machine.
 *
 *   npm run build && npx tsx test/bench/searchCost.ts [--rounds 2] [--duration 5] [--connections 32] [--baseline <checkout>]
 *
 * `--baseline` adds the server of another checkout (built with `npm run build`) on its own copy of the fixture:
 * before and after in the same rounds. Each server builds its index at the first search and loads its ranking
 * index before it is measured. `PROFILE=1` profiles our server (cpuProfile.mjs) into .tmp/bench/profiles/, one
 * profile per round of ours. Each server's VmRSS is read after the search bench's warm-up (its 100 queries) and a
 * full GC (gcOnSignal.cjs), as the search bench reads it: what two builds hold, side by side.
 * Each search round also prints the server's CPU per request split into its main thread and the others (V8's GC
 * helpers, libuv's pool), from /proc/<pid>/task.
 * `--env NAME=VALUE` adds a second server of this checkout started with that variable in its environment, in the
 * same rounds (e.g. `--env MALLOC_ARENA_MAX=2`: what fewer glibc malloc arenas cost a request and save in RSS;
 * `--env NODE_OPTIONS=--max-semi-space-size=4` is added to the script's own NODE_OPTIONS).
 * `--no-match` asks words that are in no item instead (the same words, 'q' appended): what a search request
 * costs before the engine has anything to rank or snip, its floor.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchQueries } from './corpus.js';
import { copyFixture, ensureFixture } from './fixtures.js';
import { cpuPerRequestUs, describeLoad, runLoad, type LoadResult } from './load.js';
import { loadAverage, memoryOf, setupPinning, threadsMs } from './machine.js';
import { logLine, measureGet, startAndProbe, stopServer } from './ours.js';
import type { Served } from './processes.js';
import { loadSettings, scriptOptions } from './settings.js';
import { timedGet } from './timing.js';

const options = scriptOptions();
const ROUNDS = options.number('--rounds', 2);
const DURATION_S = options.number('--duration', 5);
const CONNECTIONS = options.number('--connections', 32);
const BASELINE = options.text('--baseline');
const EXTRA_ENV = options.variable('--env');
const NO_MATCH = process.argv.includes('--no-match');
const WARMUP_S = 2;
const API = '/api/v1/knowledge';
const searchPath = (q: string): string => `${API}/search?q=${encodeURIComponent(q)}&limit=10`;

const settings = loadSettings();
const pinning = await setupPinning();
const docs = await ensureFixture({ items: settings.sizes.search, hotVersions: 0, contentBytes: settings.searchItemBytes, cacheDir: join(settings.outDir, 'fixtures') });
const profiles = join(settings.outDir, 'profiles');
mkdirSync(profiles, { recursive: true });
const gcOnSignal = `--expose-gc --require "${fileURLToPath(new URL('./gcOnSignal.cjs', import.meta.url))}"`;
const profile: Record<string, string> = process.env.PROFILE ? { NODE_OPTIONS: `${gcOnSignal} --import ${pathToFileURL(join(import.meta.dirname, 'cpuProfile.mjs')).href}`, CPU_PROFILE_DIR: profiles } : { NODE_OPTIONS: gcOnSignal };
const q = benchQueries();
const rotating = [...q.warmup, ...q.timed].map((x) => (NO_MATCH ? { ...x, q: x.q.replace(/\b(\w+)\b/g, '$1q') } : x));

/** A server on its own copy of the fixture, its index built and its ranking index loaded. */
async function serve(who: string, cli?: string, env: Record<string, string> = {}): Promise<Served> {
  const dataDir = await copyFixture(docs, join(settings.outDir, 'work', `searchcost-${who}`));
  const { served } = await startAndProbe({ dataDir, pinning, key: docs.key, env: { KNOWLEDGE_SEARCH: 'on', ...env }, cli });
  const first = await timedGet(`${served.url}${searchPath(rotating[0]?.q ?? 'x')}`, docs.key);
  if (first.status !== 200) throw new Error(`${who}: first search answered ${first.status}`);
  if (!(await logLine(() => served.output(), 'search ranking index ready', 180_000))) throw new Error(`${who}: no ranking index after 3 minutes`);
  for (const query of q.warmup) await timedGet(`${served.url}${searchPath(query.q)}`, docs.key);
  process.kill(served.pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 2_000));
  console.log(`${who}: VmRSS ${(await memoryOf(served.pid))?.rssMiB.toFixed(0)} MiB after the warm-up's ${q.warmup.length} searches and a full GC`);
  return served;
}

/** CPU ms of one thread group over a run, as µs per 2xx answer. */
const perOk = (ms: number, run: LoadResult): string => ((ms * 1000) / Math.max(1, run.ok)).toFixed(0);

const servers = new Map<string, Served>();
try {
  servers.set('ours', await serve('ours', undefined, profile));
  if (EXTRA_ENV) {
    // NODE_OPTIONS is added to the one the memory figure needs (gcOnSignal), not put in its place.
    const value = EXTRA_ENV.name === 'NODE_OPTIONS' ? `${gcOnSignal} ${EXTRA_ENV.value}` : EXTRA_ENV.value;
    servers.set(`ours ${EXTRA_ENV.name}=${EXTRA_ENV.value}`, await serve('ours-env', undefined, { NODE_OPTIONS: gcOnSignal, [EXTRA_ENV.name]: value }));
  }
  if (BASELINE) servers.set('before', await serve('before', join(BASELINE, 'dist/src/cli/main.js'), { NODE_OPTIONS: gcOnSignal }));
  console.log(`${pinning.description}; ${CONNECTIONS} connections; load average ${await loadAverage()}`);
  const results = new Map<string, { search: LoadResult[]; get: LoadResult[] }>([...servers.keys()].map((k) => [k, { search: [], get: [] }]));
  const names = [...servers.keys()];
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round starts with the next server: none always runs first.
    for (const who of [...names.slice((round - 1) % names.length), ...names.slice(0, (round - 1) % names.length)]) {
      const served = servers.get(who) as Served;
      const mine = results.get(who) as { search: LoadResult[]; get: LoadResult[] };
      if (process.env.PROFILE && who === 'ours') process.kill(served.pid, 'SIGUSR2');
      let n = 0;
      const next = () => ({ method: 'GET' as const, path: searchPath((rotating[n++ % rotating.length] as (typeof rotating)[number]).q) });
      const common = { url: served.url, key: docs.key, connections: CONNECTIONS, next, serverPid: served.pid };
      await runLoad({ ...common, durationS: WARMUP_S });
      const t0 = threadsMs(served.pid);
      const s = await runLoad({ ...common, durationS: DURATION_S });
      const t1 = threadsMs(served.pid);
      mine.search.push(s);
      const g = await measureGet({ served, key: docs.key, items: docs.items, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S });
      mine.get.push(g);
      console.log(`round ${round}, ${who}: search ${s.okPerSecond.toFixed(0)} req/s, ${cpuPerRequestUs(s).toFixed(0)} µs CPU/request (main thread ${perOk(t1.main - t0.main, s)}, other threads ${perOk(t1.others - t0.others, s)} µs; ${describeLoad(s)}); GET item ${g.okPerSecond.toFixed(0)} req/s, ${cpuPerRequestUs(g).toFixed(0)} µs CPU/request (${describeLoad(g)}); load average ${await loadAverage()}`);
    }
  }
  for (const [who, r] of results) {
    const least = (rs: LoadResult[]): number => Math.min(...rs.map(cpuPerRequestUs));
    const best = (rs: LoadResult[]): number => Math.max(...rs.map((x) => x.okPerSecond));
    console.log(`${who}: least CPU per request, search ${least(r.search).toFixed(0)} µs against GET item ${least(r.get).toFixed(0)} µs (${(least(r.get) / least(r.search)).toFixed(2)}×); best req/s ${best(r.search).toFixed(0)} against ${best(r.get).toFixed(0)} (${(best(r.search) / best(r.get)).toFixed(2)}×)`);
  }
  if (process.env.PROFILE) {
    process.kill((servers.get('ours') as Served).pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 2_000));
  }
} finally {
  for (const s of servers.values()) await stopServer(s);
}
