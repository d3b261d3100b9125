/**
 * The GET item figure of `npm run bench` alone: our server against the bare Koa anchor, pinned as the bench pins
 * them, in alternating rounds (32 keep-alive connections, items visited in the bench's scattered order). Reports
 * req/s and, less sensitive to a busy machine, the server's CPU per request (CPU seconds from /proc / requests).
 *
 *   npm run build && npx tsx test/bench/getCost.ts [--items 10000] [--rounds 3] [--duration 8] [--baseline <checkout>]
 *
 * `--log-level warn` runs our server without its access log (a diagnosis: what the lines cost).
 * `--baseline` adds the server of another checkout (built) to the rounds: before and after in the same run.
 *
 * `PROFILE=1` profiles our server (cpuProfile.mjs) into .tmp/bench/profiles/: one profile of the start and of
 * each of our rounds (warm-up included), the last written when the run ends.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { copyFixture, ensureFixture, itemPath } from './fixtures.js';
import { cpuPerRequestUs, describeLoad, runLoad, type LoadResult } from './load.js';
import { loadAverage, setupPinning } from './machine.js';
import { measureGet, startAndProbe, stopServer } from './ours.js';
import { startBareKoa, type Served } from './processes.js';
import { loadSettings, scriptOptions } from './settings.js';

const options = scriptOptions();
const opt = options.number;
const ITEMS = opt('--items', 10_000);
const ROUNDS = opt('--rounds', 3);
const DURATION_S = opt('--duration', 8);
/** `--log-level warn` runs our server without its access lines: what they cost (a diagnosis, not the figure). */
const LOG_LEVEL = options.text('--log-level');
/** Another checkout of the store, built (`npm run build`): its server is measured in the same rounds, as "before". */
const BASELINE = options.text('--baseline');
const WARMUP_S = 2;
const CONNECTIONS = 32;

const settingsDir = loadSettings().outDir;
const pinning = await setupPinning();
const fixture = await ensureFixture({ items: ITEMS, hotVersions: 0 });
const profiles = join(settingsDir, 'profiles');
mkdirSync(profiles, { recursive: true });
const profile: Record<string, string> = process.env.PROFILE ? { NODE_OPTIONS: `--import ${pathToFileURL(join(import.meta.dirname, 'cpuProfile.mjs')).href}`, CPU_PROFILE_DIR: profiles } : {};
const dataDir = await copyFixture(fixture, join(settingsDir, 'work', 'getcost'));
const started: Served[] = [];
const line = (who: string, r: LoadResult): string => `${who}: ${r.okPerSecond.toFixed(0)} req/s, server CPU ${cpuPerRequestUs(r).toFixed(1)} µs/request — ${describeLoad(r)}`;
type Who = 'ours' | 'before' | 'koa';
const NAMES: Record<Who, string> = { ours: 'ours', before: `ours before (${BASELINE})`, koa: 'bare Koa' };
try {
  const ours = await startAndProbe({ dataDir, pinning, key: fixture.key, env: { ...profile, ...(LOG_LEVEL ? { LOG_LEVEL } : {}) } });
  started.push(ours.served);
  const before = BASELINE ? await startAndProbe({ dataDir: await copyFixture(fixture, join(settingsDir, 'work', 'getcost-before')), pinning, key: fixture.key, cli: join(BASELINE, 'dist/src/cli/main.js') }) : undefined;
  if (before) started.push(before.served);
  const koa = await startBareKoa({ key: fixture.key, pinning });
  started.push(koa);
  console.log(`${pinning.description}; load average ${await loadAverage()}`);
  const results: Record<Who, LoadResult[]> = { ours: [], before: [], koa: [] };
  const order: Who[] = before ? ['koa', 'ours', 'before'] : ['koa', 'ours'];
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round starts with the next contender: none always runs first or last.
    for (const who of [...order.slice((round - 1) % order.length), ...order.slice(0, (round - 1) % order.length)]) {
      let r: LoadResult;
      if (who === 'koa') {
        let n = 0;
        const next = () => ({ method: 'GET' as const, path: `/api/v1/knowledge/items/${itemPath((n++ * 7919) % ITEMS)}` });
        const common = { url: koa.url, key: fixture.key, connections: CONNECTIONS, next, serverPid: koa.pid };
        await runLoad({ ...common, durationS: WARMUP_S });
        r = await runLoad({ ...common, durationS: DURATION_S });
      } else {
        const served = who === 'ours' ? ours.served : (before as NonNullable<typeof before>).served;
        // Each profile covers one of our runs (warm-up included): the first one written holds the start.
        if (process.env.PROFILE && who === 'ours') process.kill(ours.served.pid, 'SIGUSR2');
        r = await measureGet({ served, key: fixture.key, items: ITEMS, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S });
      }
      results[who].push(r);
      console.log(`round ${round}, ${line(NAMES[who], r)}`);
    }
  }
  const bestOf = (rs: LoadResult[]): LoadResult => rs.reduce((a, b) => (b.okPerSecond > a.okPerSecond ? b : a));
  const leastCpu = (rs: LoadResult[]): number => Math.min(...rs.map(cpuPerRequestUs));
  const k = bestOf(results.koa);
  for (const who of order.filter((w) => w !== 'koa')) {
    const o = bestOf(results[who]);
    console.log(
      `best of ${ROUNDS}, ${NAMES[who]}: ${o.okPerSecond.toFixed(0)} req/s against bare Koa ${k.okPerSecond.toFixed(0)} req/s: ${(o.okPerSecond / k.okPerSecond).toFixed(2)}×; ` +
        `least server CPU per request: ${leastCpu(results[who]).toFixed(1)} µs against bare Koa ${leastCpu(results.koa).toFixed(1)} µs ` +
        `(${(leastCpu(results.koa) / leastCpu(results[who])).toFixed(2)}×)`,
    );
  }
  console.log(`load average ${await loadAverage()}`);
  if (process.env.PROFILE) {
    process.kill(ours.served.pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 2_000));
  }
} finally {
  for (const s of started) await stopServer(s);
}
