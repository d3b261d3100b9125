import { performance } from 'node:perf_hooks';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SEARCH_FILE } from '../../src/storage/repo/orgStore.js';
import { copyFixture, ensureFixture, gitdirOf, itemPath, type Fixture } from './fixtures.js';
import { cpuSecondsOf, GC_ON_SIGNAL, loadAverage, memoryOf, setupPinning, type Pinning } from './machine.js';
import { logLine, startAndProbe, stopServer } from './ours.js';
import { fmt, ms, type Figure } from './report.js';
import { loadSettings, progress } from './settings.js';
import { timedGet } from './timing.js';

/**
 * The storage engine's figures (issue 17): a cold start at the large fixture (no index
 * snapshot, no history log, no search index: every record and commit read from git) with
 * search off and on, and the server's VmRSS after a full GC once 1,000 random items were read.
 *
 * Standalone: `npx tsx test/bench/engine.ts [items]` (50,000 by default; the fixture from the
 * bench's cache, built when missing). `KNOWLEDGE_STORE_CLI` runs another build (a before/after).
 */

const API = '/api/v1/knowledge';
const RANDOM_READS = 1_000;

export interface ColdStart {
  search: 'on' | 'off';
  /** From spawn to the first 200 of a GET. */
  firstOkMs: number;
  /** The organization's open, by the server's own log line. */
  openedMs: number;
  /** CPU seconds of the server up to its first 200 (a figure a busy machine disturbs less than time), and of its finished git children. */
  cpuSeconds: number;
  gitCpuSeconds: number;
  loadAverage: number;
  /**
   * With search on: from spawn to the first search answered. The index is built after the organization opens
   * (searches wait for it), so this is when the build is done; the memory phase then starts from a whole index.
   */
  firstSearchMs?: number;
}

/** After a start from what the cold start saved, RANDOM_READS GETs of random items, then a full GC. */
export interface EngineMemory {
  search: 'on' | 'off';
  reads: number;
  rssMiB: number;
  afterGcMiB: number;
  hwmMiB: number;
  /** What the RSS after the GC is made of: V8's heap (used), external memory (buffers and the WebAssembly SQLite's heap), in MiB. */
  heapUsedMiB: number;
  externalMiB: number;
  loadAverage: number;
  /** Search on: VmRSS after a full GC once a search has loaded the ranking index (after the reads). */
  afterSearchGcMiB?: number;
}

export interface EngineFigures {
  cold: ColdStart[];
  memory: EngineMemory[];
}

/** A deterministic "random" order of items (a linear congruential generator), the same every run. */
function randomItems(count: number, items: number): number[] {
  let x = 12345;
  return Array.from({ length: count }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x % items;
  });
}

/**
 * The files a server derives beside the repository (history log, index snapshot, search index),
 * removed from a copy of a fixture so that its start is cold. A fixture may hold them: the
 * `knowledge-store verify` run on a freshly built one opens the store, which writes them.
 */
export async function withoutDerivedFiles(dataDir: string): Promise<string> {
  for (const name of ['knowledge-history.jsonl', 'knowledge-index.json', SEARCH_FILE]) await rm(join(gitdirOf(dataDir), name), { force: true });
  return dataDir;
}

export async function measureEngine(args: { fixture: Fixture; pinning: Pinning; workDir: string }): Promise<EngineFigures> {
  const { fixture, pinning } = args;
  const out: EngineFigures = { cold: [], memory: [] };
  for (const search of ['off', 'on'] as const) {
    const dataDir = await withoutDerivedFiles(await copyFixture(fixture, join(args.workDir, `engine-cold-${search}`)));
    try {
      const s = await startAndProbe({ dataDir, pinning, key: fixture.key, env: { KNOWLEDGE_SEARCH: search } });
      const cpu = await cpuSecondsOf(s.served.pid);
      const opened = await logLine(() => s.served.output(), 'organization opened', 2_000);
      const figures: ColdStart = { search, firstOkMs: s.firstOkMs, openedMs: Number(opened?.ms ?? NaN), cpuSeconds: cpu.self, gitCpuSeconds: cpu.children, loadAverage: await loadAverage() };
      if (search === 'on') {
        const asked = performance.now();
        const answer = await timedGet(`${s.served.url}${API}/search?q=item&limit=1`, fixture.key, { keepBody: false });
        if (answer.status !== 200) throw new Error(`first search answered ${answer.status}`);
        figures.firstSearchMs = s.firstOkMs + (performance.now() - asked);
      }
      out.cold.push(figures);
      progress(
        `  cold start, search ${search}: first 200 after ${ms(s.firstOkMs)} (organization opened in ${String(opened?.ms)} ms by its log; ` +
          `server CPU ${fmt(figures.cpuSeconds, 2)} s, git children ${fmt(figures.gitCpuSeconds, 2)} s; load average ${fmt(figures.loadAverage, 1)})` +
          (figures.firstSearchMs === undefined ? '' : `; first search answered (the index built) after ${ms(figures.firstSearchMs)}`),
      );
      await stopServer(s.served);
      out.memory.push(await memoryAfterReads({ fixture, pinning, dataDir, search }));
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  return out;
}

/** The table's rows: the cold start judged with search off (its index build is a cost of its own), memory with the defaults (search on). */
export function engineFigures(engine: EngineFigures | undefined, label: string): Figure[] {
  const na = 'not measured (phase failed)';
  const rows: Figure[] = [];
  for (const search of ['off', 'on'] as const) {
    const c = engine?.cold.find((x) => x.search === search);
    const judged = search === 'off';
    rows.push({
      figure: `cold start, no snapshot, search ${search} (${label})`,
      ours: c ? `${ms(c.firstOkMs)} to the first 200; server CPU ${fmt(c.cpuSeconds, 2)} s + git ${fmt(c.gitCpuSeconds, 2)} s; load average ${fmt(c.loadAverage, 1)}` : na,
      anchor: '–',
      ratio: null,
      target: judged ? '< 5 s' : '– (reported)',
      pass: judged ? (c ? c.firstOkMs < 5000 : false) : null,
    });
  }
  for (const search of ['on', 'off'] as const) {
    const m = engine?.memory.find((x) => x.search === search);
    const judged = search === 'on';
    rows.push({
      figure: `VmRSS after 1,000 random reads, full GC, search ${search} (${label})`,
      ours: m ? `${fmt(m.afterGcMiB)} MiB (${fmt(m.afterGcMiB * 1.048576)} MB); ${fmt(m.rssMiB)} MiB before the GC` : na,
      anchor: '–',
      ratio: null,
      target: judged ? '< 250 MB' : '– (reported)',
      pass: judged ? (m ? m.afterGcMiB * 1.048576 < 250 : false) : null,
      note: judged ? 'MB = 10^6 bytes; the server started from what the cold start saved, GC on SIGUSR2 (gcOnSignal.cjs)' : undefined,
    });
    if (m?.afterSearchGcMiB !== undefined) {
      rows.push({
        figure: `VmRSS after the reads and one search (its ranking index loaded), full GC (${label})`,
        ours: `${fmt(m.afterSearchGcMiB)} MiB (${fmt(m.afterSearchGcMiB * 1.048576)} MB)`,
        anchor: '–',
        ratio: null,
        target: '– (reported)',
        pass: null,
      });
    }
  }
  return rows;
}

/** Started again from what the cold start saved (snapshot, history log, search index): VmRSS after random reads and a full GC. */
async function memoryAfterReads(args: { fixture: Fixture; pinning: Pinning; dataDir: string; search: 'on' | 'off' }): Promise<EngineMemory> {
  const { fixture, search } = args;
  const report = join(args.dataDir, '..', `gc-report-${search}.json`);
  const warm = await startAndProbe({
    dataDir: args.dataDir,
    pinning: args.pinning,
    key: fixture.key,
    env: { ...GC_ON_SIGNAL, KNOWLEDGE_BENCH_GC_REPORT: report, KNOWLEDGE_SEARCH: search },
  });
  try {
    for (const i of randomItems(RANDOM_READS, fixture.items)) {
      const t = await timedGet(`${warm.served.url}${API}/items/${itemPath(i)}`, fixture.key, { keepBody: false });
      if (t.status !== 200) throw new Error(`GET ${itemPath(i)}: ${t.status}`);
    }
    const gc = async (): Promise<{ before: { rssMiB: number; hwmMiB: number }; after: { rssMiB: number; hwmMiB: number } }> => {
      const before = await memoryOf(warm.served.pid);
      process.kill(warm.served.pid, 'SIGUSR2');
      await new Promise((r) => setTimeout(r, 2_000));
      const after = await memoryOf(warm.served.pid);
      if (!before || !after) throw new Error(`no /proc/${warm.served.pid}/status`);
      return { before, after };
    };
    const { before, after } = await gc();
    const usage = JSON.parse(await readFile(report, 'utf8')) as { heapUsed: number; external: number };
    const memory: EngineMemory = {
      search,
      reads: RANDOM_READS,
      rssMiB: before.rssMiB,
      afterGcMiB: after.rssMiB,
      hwmMiB: after.hwmMiB,
      heapUsedMiB: usage.heapUsed / 2 ** 20,
      externalMiB: usage.external / 2 ** 20,
      loadAverage: await loadAverage(),
    };
    progress(
      `  search ${search}, after ${RANDOM_READS} random reads: VmRSS ${fmt(memory.afterGcMiB)} MiB = ${fmt(memory.afterGcMiB * 1.048576)} MB after a full GC ` +
        `(V8 heap used ${fmt(memory.heapUsedMiB)} MiB, external ${fmt(memory.externalMiB)} MiB; ${fmt(memory.rssMiB)} MiB before the GC; VmHWM ${fmt(memory.hwmMiB)}; load average ${fmt(memory.loadAverage, 1)})`,
    );
    if (search === 'on') {
      // An organization's first search loads its ranking index in memory (in the background): what the server
      // keeps once it has, reported beside the figure of reads alone.
      const t = await timedGet(`${warm.served.url}${API}/search?q=item`, fixture.key, { keepBody: false });
      if (t.status !== 200) throw new Error(`search: ${t.status}`);
      if (!(await logLine(() => warm.served.output(), 'search ranking index ready', 120_000))) throw new Error('the search ranking index was not ready within 2 minutes');
      memory.afterSearchGcMiB = (await gc()).after.rssMiB;
      progress(`  search on, once a search loaded the ranking index: VmRSS ${fmt(memory.afterSearchGcMiB)} MiB = ${fmt(memory.afterSearchGcMiB * 1.048576)} MB after a full GC`);
    }
    return memory;
  } finally {
    await stopServer(warm.served);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const items = Number(process.argv[2] ?? 50_000);
  const settings = loadSettings();
  const fixture = await ensureFixture({ items, hotVersions: 1000 });
  const workDir = join(settings.outDir, 'engine');
  await rm(workDir, { recursive: true, force: true });
  const figures = await measureEngine({ fixture, pinning: await setupPinning(), workDir });
  console.log(JSON.stringify({ fixture: fixture.name, commits: fixture.commits, ...figures }, null, 2));
  await rm(workDir, { recursive: true, force: true });
}
