/**
 * The group commit's structure alone, without HTTP: `--writers` writers in this process put to an OrgRepo on the
 * real disk (a new repository under .tmp/bench), each its own commit, for `--duration` seconds; with `--fsync-ms`
 * every fsync waits that much longer first, as on a slower disk, so that the rate shows how many fsync waits a
 * commit's latency holds rather than how busy the machine is. With `--baseline <checkout>` the same run is made
 * with that checkout's sources, in alternating rounds, each in a child process of its own. Prints commits/s,
 * the process's CPU per commit, the commits per group commit (their histogram) and how busy the event loop was.
 *
 *   npx tsx test/bench/groupCommitSim.ts [--writers 16] [--duration 5] [--rounds 3] [--fsync-ms 0] [--baseline <checkout>]
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { FileHandleLike, FsPromises } from '../../src/storage/fs/fs.js';
import { ROOT } from '../support/child.js';
import { loadAverage } from './machine.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const WRITERS = options.number('--writers', 16);
const DURATION_S = options.number('--duration', 5);
const ROUNDS = options.number('--rounds', 3);
const FSYNC_MS = options.number('--fsync-ms', 0);
const BASELINE = options.text('--baseline');
const ONE = options.text('--one');

/** node's fs.promises, every fsync `ms` later. */
async function slowFs(ms: number): Promise<FsPromises> {
  const { promises } = await import('node:fs');
  const base = promises as unknown as FsPromises;
  if (ms === 0) return base;
  const open = async (path: string, flags: string, mode?: number): Promise<FileHandleLike> => {
    const h = await base.open(path, flags, mode);
    return { ...bound(h), sync: async () => (await new Promise((r) => setTimeout(r, ms)), h.sync()) };
  };
  return { ...base, open } as FsPromises;
}

function bound(h: FileHandleLike): FileHandleLike {
  return { write: (d) => h.write(d), chmod: (m) => h.chmod(m), close: () => h.close(), read: (b, o, l, p) => h.read(b, o, l, p), stat: () => h.stat(), sync: () => h.sync() };
}

/** One round with the sources of checkout `root`, in this process. */
async function runOne(root: string): Promise<void> {
  const src = (p: string): string => pathToFileURL(join(root, 'src', p)).href;
  const { OrgStore } = (await import(src('storage/repo/orgStore.ts'))) as typeof import('../../src/storage/repo/orgStore.js');
  const { OrgRepo } = (await import(src('storage/repo/orgRepo.ts'))) as typeof import('../../src/storage/repo/orgRepo.js');
  const { silentLogger } = (await import(src('common/log.ts'))) as typeof import('../../src/common/log.js');
  const { silentMetrics } = (await import(src('common/metrics.ts'))) as typeof import('../../src/common/metrics.js');
  const { GitCli } = (await import(src('storage/git/gitCli.ts'))) as typeof import('../../src/storage/git/gitCli.js');
  const { putIntent } = await import('../support/intents.js');
  await mkdir(join(ROOT, '.tmp', 'bench'), { recursive: true });
  const dir = await mkdtemp(join(ROOT, '.tmp', 'bench', 'group-commit-'));
  try {
    const fs = await slowFs(FSYNC_MS);
    await new OrgStore({ git: new GitCli(process.env), fs, dataDir: dir, logger: silentLogger }).create('sim', new Date('2026-01-01T00:00:00Z'));
    const sizes: number[] = [];
    const metrics = { ...silentMetrics, groupCommit: (c: { commits: number }) => void sizes.push(c.commits) };
    const repo = await OrgRepo.open({ orgId: 'sim', fs, gitdir: join(dir, 'orgs', 'sim.git'), logger: silentLogger, metrics });
    let n = 0;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        while (performance.now() - t0 < DURATION_S * 1000) {
          const i = n++;
          await repo.write((v) => putIntent(v, `w${w}/item-${i % 50}.md`, `version ${i}\n`));
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const busy = performance.eventLoopUtilization(elu0).utilization;
    await repo.close();
    const histogram = new Map<number, number>();
    for (const s of sizes) histogram.set(s, (histogram.get(s) ?? 0) + 1);
    const top = [...histogram].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([size, count]) => `${count}×${size}`);
    console.log(
      `${(n / seconds).toFixed(0)} commits/s, CPU ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms/commit, ${(n / sizes.length).toFixed(1)} commits per group commit (most: ${top.join(' ')}), event loop busy ${(busy * 100).toFixed(0)}%, load ${await loadAverage()}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (ONE) {
  await runOne(ONE);
} else {
  const contenders = [{ name: 'ours', root: ROOT }, ...(BASELINE ? [{ name: 'before', root: BASELINE }] : [])];
  console.log(`writers ${WRITERS}, ${DURATION_S} s rounds × ${ROUNDS}, fsync +${FSYNC_MS} ms, started ${new Date().toISOString()}`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of round % 2 === 1 ? contenders : [...contenders].reverse()) {
      const argv = ['tsx', import.meta.filename, '--one', c.root, '--writers', String(WRITERS), '--duration', String(DURATION_S), '--fsync-ms', String(FSYNC_MS)];
      const { stdout } = await promisify(execFile)('npx', argv, { cwd: ROOT });
      console.log(`round ${round}, ${c.name}: ${stdout.trim()}`);
    }
  }
}
