/**
 * A restart after a crash, as a liveness probe sees it: the server is started on a copy of a data directory, made
 * ready, killed with SIGKILL (its search indexes left not closed cleanly), and started again; from then on
 * `/healthz` is asked one request after another (every 20 ms) until `/readyz` answers 200 and a search of the
 * organization has answered (a search waits for its index's catch-up). Prints the longest `/healthz` answer
 * (the longest the event loop was held while answering), its p99, when the server was ready and searched, and its
 * VmRSS then, after a full GC (gcOnSignal.cjs; with PROFILE=1 the signal writes the profile instead).
 *
 *   npx tsx test/bench/crashRestart.ts [--data .tmp/bench/work/worst] [--org bench] [--rounds 2]
 *
 * The default data is the search bench's 50,000-item organization (`npm run bench` builds it). The build under
 * test is dist/ (`npm run build`), or the one `KNOWLEDGE_STORE_CLI` names (another checkout, for a baseline).
 */
import { cp, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ensureBuilt, killAllChildren, ROOT, runCli, spawnServe } from '../support/child.js';
import { GC_ON_SIGNAL } from './machine.js';
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
    // Otherwise SIGUSR2 runs a full collection (gcOnSignal.cjs), so that VmRSS is read without the start's garbage.
    const profileEnv: Record<string, string> = profiling ? { NODE_OPTIONS: `--import ${join(ROOT, 'test/bench/cpuProfile.mjs')}`, CPU_PROFILE_DIR: join(ROOT, '.tmp/bench/profiles') } : GC_ON_SIGNAL;
    if (profiling) await mkdir(profileEnv.CPU_PROFILE_DIR as string, { recursive: true });
    const report = join(copy, '..', 'crash-restart-gc.json');
    const again = await spawnServe(copy, 120_000, profiling ? profileEnv : { ...profileEnv, KNOWLEDGE_BENCH_GC_REPORT: report });
    const r = await probe(again.url, key);
    again.proc.kill('SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const rss = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${again.pid}/status`, 'utf8'))?.[1];
    const heap = profiling ? null : (JSON.parse(await readFile(report, 'utf8').catch(() => 'null')) as { heapTotal: number; external: number; spaces: Record<string, { size: number }> } | null);
    const made = heap ? ` (V8 heap ${(heap.heapTotal / 1048576).toFixed(0)} MiB, its young generation ${(((heap.spaces.new_space?.size ?? 0) + (heap.spaces.semi_space?.size ?? 0)) / 1048576).toFixed(0)} MiB; external ${(heap.external / 1048576).toFixed(0)} MiB)` : '';
    const caught = /search index caught up[^\n]*/.exec(again.stdout())?.[0] ?? 'no search index change logged (nothing to catch up)';
    console.log(
      `round ${round}: /healthz longest ${r.longest.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms; ready after ${(r.readyMs / 1000).toFixed(1)} s, ` +
        `searched after ${(r.searchedMs / 1000).toFixed(1)} s; VmRSS then ${(Number(rss) / 1024).toFixed(0)} MiB${profiling ? '' : ` after a full GC${made}`}; load ${loadavg()[0]?.toFixed(2)}\n  ${caught}`,
    );
    await again.kill('SIGTERM');
  }
} finally {
  await killAllChildren();
  await rm(copy, { recursive: true, force: true });
}
