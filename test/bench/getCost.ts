/**
 * The GET item figure of `npm run bench` alone: our server against the bare Koa anchor, pinned as the bench pins
 * them, in alternating rounds (32 keep-alive connections, items visited in the bench's scattered order). Reports
 * req/s and, less sensitive to a busy machine, the server's CPU per request (CPU seconds from /proc / requests).
 *
 *   npm run build && npx tsx test/bench/getCost.ts [--items 10000] [--rounds 3] [--duration 8]
 *
 * `PROFILE=1` profiles our server (cpuProfile.mjs) into .tmp/bench/profiles/: one profile of the start and of
 * each of our rounds (warm-up included), the last written when the run ends.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { copyFixture, ensureFixture, itemPath } from './fixtures.js';
import { describeLoad, runLoad, type LoadResult } from './load.js';
import { loadAverage, setupPinning } from './machine.js';
import { measureGet, startAndProbe, stopServer } from './ours.js';
import { startBareKoa, type Served } from './processes.js';
import { loadSettings } from './settings.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number): number => {
  const at = argv.indexOf(name);
  return at === -1 ? dflt : Number(argv[at + 1]);
};
const ITEMS = opt('--items', 10_000);
const ROUNDS = opt('--rounds', 3);
const DURATION_S = opt('--duration', 8);
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
/** CPU microseconds per answered request: the server's CPU over the run divided by its 2xx answers. */
const cpuPerRequestUs = (r: LoadResult): number => (r.serverCpuPercent / 100) * r.durationS * 1e6 / r.ok;
const line = (who: string, r: LoadResult): string => `${who}: ${r.okPerSecond.toFixed(0)} req/s, server CPU ${cpuPerRequestUs(r).toFixed(1)} µs/request — ${describeLoad(r)}`;
try {
  const ours = await startAndProbe({ dataDir, pinning, key: fixture.key, env: profile });
  started.push(ours.served);
  const koa = await startBareKoa({ key: fixture.key, pinning });
  started.push(koa);
  console.log(`${pinning.description}; load average ${await loadAverage()}`);
  const results: Record<'ours' | 'koa', LoadResult[]> = { ours: [], koa: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const who of round % 2 === 1 ? (['koa', 'ours'] as const) : (['ours', 'koa'] as const)) {
      let r: LoadResult;
      if (who === 'ours') {
        // Each profile covers one of our runs (warm-up included): the first one written holds the start.
        if (process.env.PROFILE) process.kill(ours.served.pid, 'SIGUSR2');
        r = await measureGet({ served: ours.served, key: fixture.key, items: ITEMS, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S });
      } else {
        let n = 0;
        const next = () => ({ method: 'GET' as const, path: `/api/v1/knowledge/items/${itemPath((n++ * 7919) % ITEMS)}` });
        const common = { url: koa.url, key: fixture.key, connections: CONNECTIONS, next, serverPid: koa.pid };
        await runLoad({ ...common, durationS: WARMUP_S });
        r = await runLoad({ ...common, durationS: DURATION_S });
      }
      results[who].push(r);
      console.log(`round ${round}, ${line(who === 'ours' ? 'ours' : 'bare Koa', r)}`);
    }
  }
  const bestOf = (rs: LoadResult[]): LoadResult => rs.reduce((a, b) => (b.okPerSecond > a.okPerSecond ? b : a));
  const o = bestOf(results.ours);
  const k = bestOf(results.koa);
  const leastCpu = (rs: LoadResult[]): number => Math.min(...rs.map(cpuPerRequestUs));
  console.log(
    `best of ${ROUNDS}: ours ${o.okPerSecond.toFixed(0)} req/s, bare Koa ${k.okPerSecond.toFixed(0)} req/s: ${(o.okPerSecond / k.okPerSecond).toFixed(2)}×; ` +
      `least server CPU per request: ours ${leastCpu(results.ours).toFixed(1)} µs, bare Koa ${leastCpu(results.koa).toFixed(1)} µs ` +
      `(${(leastCpu(results.koa) / leastCpu(results.ours)).toFixed(2)}×); load average ${await loadAverage()}`,
  );
  if (process.env.PROFILE) {
    process.kill(ours.served.pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 2_000));
  }
} finally {
  for (const s of started) await stopServer(s);
}
