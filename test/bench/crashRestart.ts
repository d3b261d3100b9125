/**
 * A restart after a crash, as a liveness probe sees it: the server is started on a copy of a data directory, made
 * ready, killed with SIGKILL (its search indexes left not closed cleanly), and started again; from then on
 * `/healthz` is asked one request after another (every 20 ms) until `/readyz` answers 200 and a search of the
 * organization has answered (a search waits for its index's catch-up). Prints the longest `/healthz` answer
 * (the longest the event loop was held while answering), its p99, and when the server was ready and searched.
 *
 *   npx tsx test/bench/crashRestart.ts [--data .tmp/bench/work/worst] [--org bench] [--rounds 2]
 *
 * The default data is the search bench's 50,000-item organization (`npm run bench` builds it). The build under
 * test is dist/ (`npm run build`), or the one `KNOWLEDGE_STORE_CLI` names (another checkout, for a baseline).
 */
import { cp, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ensureBuilt, killAllChildren, ROOT, runCli, spawnServe } from '../support/child.js';
import { sampleAt } from './timing.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: join(ROOT, '.tmp/bench/work/worst') },
    org: { type: 'string', default: 'bench' },
    rounds: { type: 'string', default: '2' },
  },
});
const rounds = Number(values.rounds);
const org = values.org;
const copy = join(ROOT, '.tmp/bench/crash-restart');

async function probe(url: string, key: string): Promise<{ longest: number; p99: number; readyMs: number; searchedMs: number }> {
  const started = performance.now();
  const times: number[] = [];
  let readyMs = 0;
  let searchedMs = 0;
  const watch = (async () => {
    while (readyMs === 0 || searchedMs === 0) {
      if (readyMs === 0 && (await fetch(`${url}/readyz`)).status === 200) readyMs = performance.now() - started;
      if (readyMs !== 0 && searchedMs === 0) {
        const r = await fetch(`${url}/api/v1/knowledge/search?q=report+policy`, { headers: { Authorization: `Bearer ${key}` } });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`search: ${r.status}`);
        searchedMs = performance.now() - started;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  let done = false;
  void watch.finally(() => (done = true));
  while (!done) {
    const t = performance.now();
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    times.push(performance.now() - t);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await watch;
  times.sort((a, b) => a - b);
  return { longest: times[times.length - 1] ?? 0, p99: sampleAt(times, 0.99), readyMs, searchedMs };
}

await ensureBuilt();
try {
  await rm(copy, { recursive: true, force: true });
  console.log(`copying ${values.data} ...`);
  await cp(values.data, copy, { recursive: true });
  const created = await runCli(['key', 'create', '--org', org, '--role', 'admin', '--name', 'crash-restart', '--json', '--data-dir', copy]);
  if (created.code !== 0) throw new Error(`key create: ${created.stderr}`);
  const key = (JSON.parse(created.stdout) as { key: string }).key;
  for (let round = 1; round <= rounds; round++) {
    const first = await spawnServe(copy, 120_000);
    while ((await fetch(`${first.url}/readyz`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    await first.kill('SIGKILL');
    // PROFILE=1: the restarted server profiles its CPU from its start (cpuProfile.mjs), written once searched.
    const profiling = process.env.PROFILE === '1';
    const profileEnv: Record<string, string> = profiling ? { NODE_OPTIONS: `--import ${join(ROOT, 'test/bench/cpuProfile.mjs')}`, CPU_PROFILE_DIR: join(ROOT, '.tmp/bench/profiles') } : {};
    if (profiling) await mkdir(profileEnv.CPU_PROFILE_DIR as string, { recursive: true });
    const again = await spawnServe(copy, 120_000, profileEnv);
    const r = await probe(again.url, key);
    if (profiling) {
      again.proc.kill('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    const caught = /search index caught up[^\n]*/.exec(again.stdout())?.[0] ?? 'no search index change logged (nothing to catch up)';
    console.log(
      `round ${round}: /healthz longest ${r.longest.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms; ready after ${(r.readyMs / 1000).toFixed(1)} s, ` +
        `searched after ${(r.searchedMs / 1000).toFixed(1)} s; load ${loadavg()[0]?.toFixed(2)}\n  ${caught}`,
    );
    await again.kill('SIGTERM');
  }
} finally {
  await killAllChildren();
  await rm(copy, { recursive: true, force: true });
}
