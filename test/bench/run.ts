/**
 * `npm run bench` (see README, Performance): our server side by side with anchors measured in
 * the same run on the same machine, a markdown table on stdout, everything in
 * `.tmp/bench/results-<timestamp>.json` and `.tmp/bench/latest.json`, progress
 * on stderr. Not a test: a missed target is reported in the table, not an
 * error; the exit code is 1 only when the run itself broke.
 *
 * Anchors: (a) a bare Koa app with the same auth check answering a fixed JSON
 * item; (b) native git plumbing committing one file per commit, durably, in a
 * copy of the same fixture; (c) the naive isomorphic-git working-tree loop.
 * Ours: GET item, lists, durable PUTs with 1 and 16 writers and at three sizes,
 * history of a 1,000-version item, startup time and memory at 50,000 items;
 * then search (search.ts): query latency and throughput, cold index build and the
 * index's memory at 50,000 items of ~2 KB, and PUTs with search on against off.
 *
 * BENCH_QUICK=1 for a smoke run with small sizes; BENCH_DURATION=<seconds> per
 * load run; BENCH_VERIFY=1 to run `knowledge-store verify` on cached fixtures too.
 */
import { rm, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI } from '../support/child.js';
import { FSYNC_CONFIG, runGitPlumbing, runNaiveIsomorphicGit, type CommitLoopResult } from './anchors/commitLoops.js';
import { engineFigures, measureEngine, withoutDerivedFiles, type EngineFigures } from './engine.js';
import { copyFixture, ensureFixture, gitdirOf, HOT_PATH, itemPath, verifyFixture, type Fixture } from './fixtures.js';
import { cpuPerRequestUs, describeLoad, runLoad, type LoadResult } from './load.js';
import { describeMachine, loadAverage, memoryOf, neighbourMeter, setupPinning } from './machine.js';
import { measureGet, measureHistory, measureList, measurePut, searchBuildDone, serverComplaints, startAndProbe, stopServer, type ListFigure, type PutRun, type Startup } from './ours.js';
import { SERVER_ENV, startBareKoa, type Served } from './processes.js';
import { best, fmt, ms, renderMarkdown, rounds, writeReport, type BenchReport, type Figure } from './report.js';
import { runSearchPhase, type SearchResults } from './search.js';
import { commitBatchText, measureCommitVsPuts, type CommitBatchResult } from './commitBatch.js';
import { searchFigures } from './searchFigures.js';
import { loadSettings, progress } from './settings.js';

const settings = loadSettings();
const startedAt = new Date().toISOString();
const runTag = startedAt.replace(/[^0-9]/g, '').slice(0, 14);
const workDir = join(settings.outDir, 'work');
const raw: Record<string, unknown> = { neighbourCpuPercent: {} };
const problems: string[] = [];
const figures: Figure[] = [];
const running = new Set<Served>();
const GET_CONNECTIONS = 32;
const WRITERS = 16;
/** Load runs per figure; contender and anchor alternate, and the best round of each is compared. */
const ROUNDS = 2;

/** Runs one phase; a phase that throws is reported, and the run goes on with the next. */
async function phase<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
  progress(`${name}...`);
  const neighbours = await neighbourMeter();
  try {
    return await fn();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    problems.push(`${name} failed: ${message.slice(0, 1500)}`);
    progress(`${name} FAILED: ${message.slice(0, 500)}`);
    return undefined;
  } finally {
    // Other processes busy during the phase disturb its figures (the contenders share CPU 0 with whatever else runs).
    const busy = await neighbours();
    (raw.neighbourCpuPercent as Record<string, number>)[name.trim()] = Math.round(busy);
    if (busy > 10) problems.push(`other processes used ${fmt(busy)}% of a CPU on average during "${name.trim()}": its figures are disturbed`);
  }
}

async function serve(fixture: Fixture, label: string, probePath?: string, reuse?: string): Promise<{ s: Startup; dataDir: string }> {
  const dataDir = reuse ?? (await copyFixture(fixture, join(workDir, label)));
  const s = await startAndProbe({ dataDir, pinning, key: fixture.key, probePath });
  running.add(s.served);
  return { s, dataDir };
}

async function stop(s: Startup, label: string): Promise<void> {
  problems.push(...serverComplaints(s.served, label));
  await stopServer(s.served);
  running.delete(s.served);
}

const loadOk = (r: LoadResult): boolean => r.non2xx === 0 && r.errors === 0 && r.ok > 0;
const loadNote = (r: LoadResult): string | undefined =>
  loadOk(r) ? undefined : `${r.non2xx} non-2xx ${JSON.stringify(r.statusCodes)}, ${r.errors} errors (${r.timeouts} timeouts) of ${r.sent} sent`;
const putText = (p: PutRun): string =>
  `${fmt(p.load.okPerSecond)} PUT/s (${ms(p.msPerPut)}/PUT, p99 ${p.load.latencyMs.p99} ms; ${p.commits} commits for ${p.load.ok} 2xx; server CPU ${fmt(p.load.serverCpuPercent)}% + ${fmt(p.load.serverChildrenCpuPercent)}% git children; ${p.repacks} automatic repacks; then ${p.objects.packs} packs, ${p.objects.loose} loose objects)`;
const putNote = (p: PutRun): string | undefined => {
  const parts = [loadNote(p.load), p.ownCommits ? undefined : `commits ${p.commits} vs 2xx ${p.load.ok} / sent ${p.load.sent}: not one commit per PUT`];
  const text = parts.filter(Boolean).join('; ');
  return text || undefined;
};
const startupText = (s: Omit<Startup, 'served'>): string =>
  `first 200 after ${ms(s.firstOkMs)} (listening ${ms(s.listeningMs)}, first GET ${ms(s.firstRequestMs)}${
    s.opened ? `, organization opened in ${String(s.opened.ms)} ms by its own log` : ''
  }); VmRSS ${fmt(s.rssMiB)} MiB, VmHWM ${fmt(s.hwmMiB)} MiB`;
const putClean = (p: PutRun): boolean => loadOk(p.load) && p.ownCommits;
const loopText = (r: CommitLoopResult): string => `${fmt(r.commitsPerSecond, 1)} commits/s (${r.commits} in ${fmt(r.seconds, 1)} s)`;

// ---------------------------------------------------------------------------------------------
await stat(CLI).catch(() => {
  throw new Error(`${CLI} is missing: run \`npm run build\` first (npm run bench does)`);
});
const pinning = await setupPinning();
await rm(workDir, { recursive: true, force: true });
await mkdir(workDir, { recursive: true });
const machine = await describeMachine({ dataDir: workDir, pinning });
progress(`machine: ${machine.cpuModel}, ${machine.cpus} CPUs; node ${machine.node}; git ${machine.git}; ${machine.kernel}; ${machine.dataDirFs}`);
progress(`CPUs: ${machine.pinning}`);
progress(`settings: ${settings.quick ? 'QUICK, ' : ''}${settings.durationS} s per load run, sizes ${JSON.stringify(settings.sizes)}, hot item ${settings.hotVersions} versions`);

const exitHandler = (): void => {
  for (const s of running) void s.stop();
};
process.once('SIGINT', () => {
  exitHandler();
  process.exit(130);
});

let exitCode = 0;
const fixtureRows: Array<Record<string, unknown>> = [];
try {
  // ---- fixtures ----
  const sizes = settings.sizes;
  const fixtureOf = async (items: number, hotVersions: number, contentBytes?: number): Promise<Fixture> => {
    const f = await ensureFixture({ items, hotVersions, contentBytes, cacheDir: join(settings.outDir, 'fixtures') });
    // A freshly built fixture is always checked by the store's own `verify`; a cached one was checked when built.
    const verified = f.generatedMs !== null || settings.verifyAll ? await verifyFixture(f) : undefined;
    fixtureRows.push({
      name: f.name,
      items: f.items + (hotVersions ? 1 : 0),
      commits: f.commits,
      'pack MiB': fmt(f.repoBytes / 1048576, 1),
      generated: f.generatedMs === null ? 'cached' : `${fmt(f.generatedMs / 1000, 1)} s`,
      verify: verified ? verified.report : 'checked when built',
    });
    return f;
  };
  const small = await fixtureOf(sizes.small, 0);
  const medium = await fixtureOf(sizes.medium, 0);
  const large = await fixtureOf(sizes.large, settings.hotVersions);
  const docs = await fixtureOf(sizes.search, 0, settings.searchItemBytes);
  raw.fixtures = fixtureRows;

  // ---- anchor (c): naive isomorphic-git (its own phase: nothing of ours runs beside it) ----
  const naive: Record<number, CommitLoopResult | undefined> = {};
  for (const files of [100, 1_000]) {
    naive[files] = await phase(`anchor (c): naive isomorphic-git, ${files} files in the working tree`, async () => {
      const dir = join(workDir, `naive-${files}`);
      const r = await runNaiveIsomorphicGit({ dir, files, durationS: settings.durationS, pinning });
      if (r.counted !== r.commits) throw new Error(`isomorphic-git loop reported ${r.commits} commits, git counts ${r.counted}`);
      progress(`  naive isomorphic-git (${files} files): ${loopText(r)}`);
      await rm(dir, { recursive: true, force: true });
      return r;
    });
  }
  raw.naiveIsomorphicGit = naive;

  // ---- ours: small fixture ----
  const putAt: Record<string, PutRun[]> = { small: [], medium: [], large: [] };
  const lists: Record<string, ListFigure | undefined> = {};
  await phase(`ours, ${small.items} items: lists, PUT 1 writer`, async () => {
    const { s, dataDir } = await serve(small, 'small');
    try {
      for (const withContent of [false, true]) {
        lists[`small-${withContent}`] = await measureList({ url: s.served.url, key: small.key, expectedItems: small.items, withContent, mode: 'unpaged', samples: settings.samples });
      }
      for (let round = 1; round <= ROUNDS; round++) {
        const p = await measurePut({ served: s.served, key: small.key, items: small.items, connections: 1, durationS: settings.durationS, gitdir: gitdirOf(dataDir), tag: `${runTag}-small-${round}` });
        putAt.small?.push(p);
        progress(`  PUT 1 writer at ${small.items} items, round ${round}: ${putText(p)}`);
      }
    } finally {
      await stop(s, `${small.items} items`);
    }
  });

  // ---- ours: one POST /commits of 100 puts against 100 sequential PUTs, same server, same run ----
  let commitBatch: CommitBatchResult | undefined;
  await phase(`ours, ${small.items} items: POST /commits of 100 puts vs 100 sequential PUTs`, async () => {
    const { s } = await serve(small, 'commits');
    try {
      commitBatch = await measureCommitVsPuts({ url: s.served.url, key: small.key, operations: 100, rounds: ROUNDS + 1 });
      progress(`  ${commitBatchText(commitBatch).ours}; ${commitBatchText(commitBatch).anchor}`);
    } finally {
      await stop(s, 'commits');
    }
  });
  raw.commitBatch = commitBatch;

  // ---- ours: medium fixture, with anchors (a) and (b) interleaved round by round ----
  const gets: Array<LoadResult & { bodyBytes: number }> = [];
  const koas: Array<LoadResult & { bodyBytes: number }> = [];
  const plumbings: CommitLoopResult[] = [];
  const put16s: PutRun[] = [];
  let listMemory: { beforeHwm: number; afterHwm: number } | undefined;
  await phase(`ours, ${medium.items} items: GET (with anchor a), lists, PUT 1 writer (with anchor b), ${WRITERS} writers`, async () => {
    const { s, dataDir } = await serve(medium, 'medium');
    try {
      await phase(`  GET item, ${GET_CONNECTIONS} connections: ours and bare Koa, ${ROUNDS} interleaved rounds`, async () => {
        const koa = await startBareKoa({ key: medium.key, pinning });
        running.add(koa);
        try {
          const denied = await fetch(`${koa.url}/x`, { headers: { authorization: 'Bearer nope' } });
          if (denied.status !== 401) throw new Error(`bare Koa anchor answered ${denied.status} to a wrong key`);
          const sample = await fetch(`${koa.url}/x`, { headers: { authorization: `Bearer ${medium.key}` } });
          const bodyBytes = (await sample.arrayBuffer()).byteLength;
          for (let round = 1; round <= ROUNDS; round++) {
            let n = 0;
            const next = () => ({ method: 'GET' as const, path: `/api/v1/knowledge/items/${itemPath((n++ * 7919) % medium.items)}` });
            const common = { url: koa.url, key: medium.key, connections: GET_CONNECTIONS, next, serverPid: koa.pid };
            await runLoad({ ...common, durationS: settings.warmupS });
            const k = { ...(await runLoad({ ...common, durationS: settings.durationS })), bodyBytes };
            koas.push(k);
            progress(`  round ${round}, bare Koa: ${describeLoad(k)}`);
            const g = await measureGet({ served: s.served, key: medium.key, items: medium.items, connections: GET_CONNECTIONS, durationS: settings.durationS, warmupS: settings.warmupS });
            gets.push(g);
            progress(`  round ${round}, ours:     ${describeLoad(g)}`);
          }
        } finally {
          await koa.stop();
          running.delete(koa);
        }
      });
      const before = await memoryOf(s.served.pid);
      for (const mode of ['walk', 'page', 'unpaged'] as const) {
        for (const withContent of [false, true]) {
          const key = `medium-${mode}-${withContent}`;
          const l = await measureList({ url: s.served.url, key: medium.key, expectedItems: medium.items, withContent, mode, samples: settings.samples });
          lists[key] = l;
          progress(`  list ${mode} content=${withContent}: median ${ms(l.total.median)}, first byte ${ms(l.firstByte.median)}, ${fmt(l.bytes / 1024)} KiB, ${l.requests} request(s)`);
        }
      }
      const after = await memoryOf(s.served.pid);
      listMemory = { beforeHwm: before?.hwmMiB ?? NaN, afterHwm: after?.hwmMiB ?? NaN };
      const gitdir = gitdirOf(dataDir);
      // Anchor (b) works on its own copy of the same fixture, on the same CPU, between our runs (our server idles then).
      const plumbingDir = await copyFixture(medium, join(workDir, 'plumbing'));
      for (let round = 1; round <= ROUNDS; round++) {
        const r = await runGitPlumbing({ gitdir: gitdirOf(plumbingDir), items: medium.items, durationS: settings.durationS, pinning });
        if (r.counted !== r.commits) throw new Error(`git plumbing loop reported ${r.commits} commits, git counts ${r.counted}`);
        plumbings.push(r);
        progress(`  round ${round}, git plumbing: ${loopText(r)}`);
        const p = await measurePut({ served: s.served, key: medium.key, items: medium.items, connections: 1, durationS: settings.durationS, gitdir, tag: `${runTag}-medium-${round}` });
        putAt.medium?.push(p);
        progress(`  round ${round}, ours PUT 1 writer: ${putText(p)}`);
      }
      await rm(plumbingDir, { recursive: true, force: true });
      for (let round = 1; round <= ROUNDS; round++) {
        const p = await measurePut({ served: s.served, key: medium.key, items: medium.items, connections: WRITERS, durationS: settings.durationS, gitdir, tag: `${runTag}-16-${round}` });
        put16s.push(p);
        progress(`  round ${round}, ours PUT ${WRITERS} writers: ${putText(p)}`);
      }
    } finally {
      await stop(s, `${medium.items} items`);
    }
  });
  raw.bareKoaGet = koas;
  raw.get = gets;
  raw.gitPlumbing = plumbings;
  raw.lists = lists;
  raw.listMemory = listMemory;
  raw.put16 = put16s;

  // ---- ours: large fixture: startup cold and warm, history, PUT ----
  const startups: { cold?: Omit<Startup, 'served'>; warm?: Omit<Startup, 'served'> } = {};
  let history: Awaited<ReturnType<typeof measureHistory>> | undefined;
  /** How long the warm start's resumed search index build was waited for before history and PUT were timed. */
  let buildWaitedMs = 0;
  await phase(`ours, ${large.items} items + ${large.commits} commits: startup, history, PUT 1 writer`, async () => {
    // Without the files a fixture's `verify` left in it: a cold start derives them all.
    const { s: cold, dataDir } = await serve(large, 'large', HOT_PATH, await withoutDerivedFiles(await copyFixture(large, join(workDir, 'large'))));
    const { served: _c, ...coldFigures } = cold;
    startups.cold = coldFigures;
    progress(`  cold start: ${startupText(cold)}`);
    await stop(cold, `${large.items} items (cold start)`);
    const { s: warm } = await serve(large, 'large', HOT_PATH, dataDir);
    try {
      const { served: _w, ...warmFigures } = warm;
      startups.warm = warmFigures;
      progress(`  warm start: ${startupText(warm)}`);
      // The cold start was stopped before its search index was built: the rest builds now, and what is timed
      // meanwhile would be timed against it (the cold index build has a row of its own, in the search phase).
      buildWaitedMs = await searchBuildDone(warm.served, 180_000);
      if (buildWaitedMs > 0) progress(`  waited ${ms(buildWaitedMs)} for the search index build this start resumed`);
      history = await measureHistory({ url: warm.served.url, key: large.key, versions: large.hotVersions, samples: settings.samples });
      progress(`  history (${large.hotVersions} versions): median ${ms(history.total.median)}, p95 ${ms(history.total.p95)}`);
      for (let round = 1; round <= ROUNDS; round++) {
        const p = await measurePut({ served: warm.served, key: large.key, items: large.items, connections: 1, durationS: settings.durationS, gitdir: gitdirOf(dataDir), tag: `${runTag}-large-${round}` });
        putAt.large?.push(p);
        progress(`  PUT 1 writer at ${large.items} items, round ${round}: ${putText(p)}`);
      }
    } finally {
      await stop(warm, `${large.items} items (warm start)`);
    }
  });
  raw.startups = startups;
  raw.history = history;
  raw.putAt = putAt;

  // ---- the storage engine (issue 17): cold start with search off and on, memory after random reads ----
  let engine: EngineFigures | undefined;
  await phase(`engine, ${large.items} items + ${large.commits} commits: cold start (search off, on), VmRSS after 1,000 random reads`, async () => {
    engine = await measureEngine({ fixture: large, pinning, workDir });
  });
  raw.engine = engine;

  // ---- search: its own fixture of ~2 KB items; PUTs with search on and off on the medium one ----
  let searched: SearchResults = {};
  await phase(`search, ${docs.items} items of ~${settings.searchItemBytes} bytes; PUT with search on and off`, async () => {
    searched = await runSearchPhase({ docs, putFixture: medium, settings, pinning, workDir, runTag, rounds: ROUNDS, connections: GET_CONNECTIONS, writers: WRITERS, running, problems, phase });
  });
  raw.search = searched;

  // ---- the table: each figure is the best of its rounds (the least disturbed by anything else on the machine) ----
  const na = 'not measured (phase failed)';
  const get = best(gets, (r) => r.okPerSecond);
  const koa = best(koas, (r) => r.okPerSecond);
  const plumbing = best(plumbings, (r) => r.commitsPerSecond);
  const put16 = best(put16s, (p) => p.load.okPerSecond);
  const bestPut = { small: best(putAt.small ?? [], (p) => p.load.okPerSecond), medium: best(putAt.medium ?? [], (p) => p.load.okPerSecond), large: best(putAt.large ?? [], (p) => p.load.okPerSecond) };
  // GET
  if (get && koa) {
    const ratio = get.okPerSecond / koa.okPerSecond;
    figures.push({
      figure: `GET item, ${GET_CONNECTIONS} connections (${medium.items} items)`,
      ours: `${fmt(get.okPerSecond)} req/s (p99 ${get.latencyMs.p99} ms; body ${get.bodyBytes} B; server CPU ${fmt(get.serverCpuPercent)}%)`,
      anchor: `bare Koa ${fmt(koa.okPerSecond)} req/s (p99 ${koa.latencyMs.p99} ms; body ${koa.bodyBytes} B; server CPU ${fmt(koa.serverCpuPercent)}%)`,
      ratio,
      target: '≥ 0.75× bare Koa',
      pass: ratio >= 0.75 && gets.every(loadOk) && koas.every(loadOk),
      note: [
        ...gets.map(loadNote).filter(Boolean),
        ...koas.map(loadNote).filter(Boolean),
        `best of ${ROUNDS} interleaved rounds (ours ${rounds(gets.map((r) => r.okPerSecond))}; Koa ${rounds(koas.map((r) => r.okPerSecond))})`,
        // CPU per answer moves far less with a busy machine than req/s does: the server's CPU seconds over its 2xx answers.
        `server CPU per request in the best rounds: ours ${fmt(cpuPerRequestUs(get), 1)} µs, Koa ${fmt(cpuPerRequestUs(koa), 1)} µs`,
        `CPU in the best rounds, % of one CPU: load generator ${fmt(get.loadCpuPercent)} (ours) / ${fmt(koa.loadCpuPercent)} (Koa), ` +
          `rest of the machine ${fmt(get.otherCpuPercent)} / ${fmt(koa.otherCpuPercent)} (kernel work and other processes; other processes alone ${fmt(get.neighbourCpuPercent)} / ${fmt(koa.neighbourCpuPercent)})`,
        ...(koa.loadCpuPercent >= 90
          ? ['the load generator was near saturation against Koa: the anchor may be capped by it, which flatters our ratio']
          : []),
      ].join('; '),
    });
  } else figures.push({ figure: 'GET item, 32 connections', ours: get ? `${fmt(get.okPerSecond)} req/s` : na, anchor: koa ? `${fmt(koa.okPerSecond)} req/s` : na, ratio: null, target: '≥ 0.75× bare Koa', pass: false });
  // One commit of 100 operations vs 100 PUTs (issue 15)
  if (commitBatch) {
    figures.push({
      figure: '100-operation commit vs 100 PUTs, same run',
      ...commitBatchText(commitBatch),
      ratio: commitBatch.ratio,
      target: '≥ 20× faster',
      pass: commitBatch.ratio >= 20,
      note: `best of ${commitBatch.rounds} alternating rounds, each writing new content to the same 100 items (${small.items}-item fixture)`,
    });
  } else figures.push({ figure: '100-operation commit vs 100 PUTs, same run', ours: na, anchor: na, ratio: null, target: '≥ 20× faster', pass: false });
  // PUT 1 writer vs plumbing
  const p1 = bestPut.medium;
  if (p1 && plumbing) {
    const ratio = p1.load.okPerSecond / plumbing.commitsPerSecond;
    figures.push({
      figure: `PUT update, 1 writer, durable (${medium.items} items)`,
      ours: putText(p1),
      anchor: `git plumbing ${loopText(plumbing)}`,
      ratio,
      target: '≥ 3× git plumbing',
      pass: ratio >= 3 && (putAt.medium ?? []).every(putClean),
      note: [
        ...(putAt.medium ?? []).map(putNote).filter(Boolean),
        `best of ${ROUNDS} interleaved rounds (ours ${rounds((putAt.medium ?? []).map((p) => p.load.okPerSecond), 1)}; git ${rounds(plumbings.map((r) => r.commitsPerSecond), 1)})`,
      ].join('; '),
    });
  } else figures.push({ figure: 'PUT update, 1 writer, durable', ours: p1 ? putText(p1) : na, anchor: plumbing ? loopText(plumbing) : na, ratio: null, target: '≥ 3× git plumbing', pass: false });
  for (const files of [100, 1_000]) {
    const r = naive[files];
    if (p1 && r) {
      figures.push({
        figure: `PUT update, 1 writer vs naive isomorphic-git (${files} files)`,
        ours: `${fmt(p1.load.okPerSecond)} PUT/s`,
        anchor: `isomorphic-git ${loopText(r)}, not durable`,
        ratio: p1.load.okPerSecond / r.commitsPerSecond,
        target: '– (reference)',
        pass: null,
      });
    }
  }
  // PUT 16 writers
  figures.push(
    put16
      ? {
          figure: `PUT update, ${WRITERS} writers, durable (${medium.items} items)`,
          ours: putText(put16),
          anchor: plumbing ? `git plumbing ${fmt(plumbing.commitsPerSecond, 1)} commits/s` : '–',
          ratio: plumbing ? put16.load.okPerSecond / plumbing.commitsPerSecond : null,
          target: '≥ 1,000 commits/s, one commit per PUT',
          pass: put16.load.okPerSecond >= 1000 && put16s.every(putClean),
          note: [...put16s.map(putNote).filter(Boolean), `best of ${ROUNDS} rounds (${rounds(put16s.map((p) => p.load.okPerSecond))})`].join('; '),
        }
      : { figure: `PUT update, ${WRITERS} writers`, ours: na, anchor: '–', ratio: null, target: '≥ 1,000 commits/s', pass: false },
  );
  // PUT cost by size
  for (const [label, run, all] of [
    [`${small.items} items`, bestPut.small, putAt.small ?? []],
    [`${large.items} items`, bestPut.large, putAt.large ?? []],
  ] as const) {
    if (run) {
      const note = [...all.map(putNote).filter(Boolean), `best of ${ROUNDS} rounds (${rounds(all.map((p) => p.load.okPerSecond), 1)})`].join('; ');
      figures.push({ figure: `PUT update, 1 writer, durable (${label})`, ours: putText(run), anchor: '–', ratio: null, target: '–', pass: null, note });
    }
  }
  if (bestPut.small && bestPut.large) {
    const ratio = bestPut.large.msPerPut / bestPut.small.msPerPut;
    const ok = [...(putAt.small ?? []), ...(putAt.large ?? [])].every(putClean);
    figures.push({
      figure: `PUT cost ${small.items} → ${large.items} items`,
      ours: `${ms(bestPut.small.msPerPut)} → ${ms(bestPut.large.msPerPut)} per PUT`,
      anchor: '–',
      ratio,
      target: '≤ 1.3×',
      pass: ratio <= 1.3 && ok,
    });
  } else figures.push({ figure: `PUT cost ${small.items} → ${large.items} items`, ours: na, anchor: '–', ratio: null, target: '≤ 1.3×', pass: false });
  // lists
  const listRow = (key: string, label: string, target: string, limitMs: number | null, streaming = false): void => {
    const l = lists[key];
    if (!l) {
      figures.push({ figure: label, ours: na, anchor: '–', ratio: null, target, pass: limitMs === null && !streaming ? null : false });
      return;
    }
    const text = `median ${ms(l.total.median)}, p95 ${ms(l.total.p95)}; first byte ${ms(l.firstByte.median)}; ${fmt(l.bytes / 1024)} KiB in ${l.requests} request(s)${l.chunked ? ', chunked' : ''}`;
    let pass: boolean | null = limitMs === null ? null : l.total.median < limitMs;
    let note: string | undefined;
    if (streaming) {
      // Streams without buffering: the length is not known up front (chunked), and the first byte comes well before the last.
      const early = l.firstByte.median < l.total.median / 2;
      pass = l.chunked && early;
      note = `judged streaming: chunked ${l.chunked}, first byte at ${fmt((100 * l.firstByte.median) / l.total.median)}% of the whole answer${
        listMemory ? `; server VmHWM ${fmt(listMemory.beforeHwm)} → ${fmt(listMemory.afterHwm)} MiB across the ${medium.items}-item lists` : ''
      }`;
    } else if (limitMs !== null) note = 'judged on the median';
    figures.push({ figure: label, ours: text, anchor: '–', ratio: null, target, pass, note });
  };
  listRow('small-false', `list ${small.items} items, no content (one answer)`, '–', null);
  listRow('small-true', `list ${small.items} items, with content (one answer)`, '–', null);
  listRow('medium-walk-false', `list ${medium.items} items, no content, all pages of 1,000`, '< 100 ms', 100);
  listRow('medium-unpaged-false', `list ${medium.items} items, no content, one answer`, '< 100 ms', 100);
  listRow('medium-page-false', `list, one page of 1,000, no content (${medium.items} items)`, '–', null);
  listRow('medium-walk-true', `list ${medium.items} items, with content, all pages of 1,000`, '–', null);
  listRow('medium-unpaged-true', `list ${medium.items} items, with content, one answer`, 'streams, no buffering', null, true);
  listRow('medium-page-true', `list, one page of 1,000, with content (${medium.items} items)`, '–', null);
  // startup
  const items50k = `${large.items + 1} items, ${large.commits} commits`;
  for (const [which, st] of [
    ['cold (first start: derives its caches)', startups.cold],
    ['warm (restart)', startups.warm],
  ] as const) {
    const judged = which.startsWith('warm');
    if (!st) {
      figures.push({ figure: `startup, ${which} (${items50k})`, ours: na, anchor: '–', ratio: null, target: judged ? '< 3 s, < 300 MB' : '–', pass: judged ? false : null });
      continue;
    }
    figures.push({
      figure: `startup, ${which} (${items50k})`,
      ours: startupText(st),
      anchor: '–',
      ratio: null,
      target: judged ? '< 3 s, < 300 MB' : '– (reported)',
      pass: judged ? st.firstOkMs < 3000 && st.rssMiB * 1.048576 < 300 : null,
      note: judged ? 'time from spawn to the first authenticated GET answered 200; memory is VmRSS right after it (MB = 10^6 bytes)' : undefined,
    });
  }
  figures.push(...engineFigures(engine, items50k));
  // history
  figures.push(
    history
      ? {
          figure: `history, ${large.hotVersions} versions (${items50k})`,
          ours: `median ${ms(history.total.median)}, p95 ${ms(history.total.p95)} (${fmt(history.bytes / 1024)} KiB)`,
          anchor: '–',
          ratio: null,
          target: '< 50 ms',
          pass: history.total.median < 50,
          note: `judged on the median${buildWaitedMs > 0 ? `; timed once the search index build this start resumed was done (${ms(buildWaitedMs)} after the first 200), as the PUTs at this size` : ''}`,
        }
      : { figure: `history, ${settings.hotVersions} versions`, ours: na, anchor: '–', ratio: null, target: '< 50 ms', pass: false },
  );
  // search
  const searchArgs = { items: docs.items, itemBytes: settings.searchItemBytes, putItems: medium.items, connections: GET_CONNECTIONS, writers: WRITERS, rounds: ROUNDS };
  figures.push(...searchFigures(searched, { ...searchArgs, mainGet: get }));
} catch (err) {
  exitCode = 1;
  problems.push(`the run broke: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  progress(`run broke: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  for (const s of running) await s.stop();
}

machine.loadAverage += `, ${await loadAverage()} at end`;
// A load run during which the rest of the machine was busy (beyond the loopback's own kernel work) was disturbed.
const loadRuns: Record<string, LoadResult[]> = {
  'bare Koa GET': (raw.bareKoaGet as LoadResult[] | undefined) ?? [],
  'our GET': (raw.get as LoadResult[] | undefined) ?? [],
  [`PUT ${WRITERS} writers`]: ((raw.put16 as PutRun[] | undefined) ?? []).map((p) => p.load),
};
for (const [size, runs] of Object.entries((raw.putAt as Record<string, PutRun[]> | undefined) ?? {})) loadRuns[`PUT 1 writer (${size})`] = runs.map((p) => p.load);
const searchRaw = raw.search as SearchResults | undefined;
loadRuns['search'] = searchRaw?.throughput?.search ?? [];
loadRuns['GET beside search'] = searchRaw?.throughput?.get ?? [];
for (const [mode, runs] of Object.entries(searchRaw?.put ?? {})) loadRuns[`PUT search ${mode} writer(s)`] = runs.map((p) => p.load);
const noisy = Object.entries(loadRuns)
  .flatMap(([name, runs]) => runs.map((r, i) => ({ name: `${name} round ${i + 1}`, other: r.neighbourCpuPercent })))
  .filter((r) => r.other > 10);
if (noisy.length > 0) {
  problems.push(
    `other processes were busy during load runs (% of one CPU): ${noisy.map((r) => `${r.name} ${fmt(r.other)}%`).join(', ')}; those figures are disturbed`,
  );
}
const report: BenchReport = {
  startedAt,
  finishedAt: new Date().toISOString(),
  settings: {
    quick: settings.quick,
    'seconds per load run': settings.durationS,
    'warm-up seconds (GET runs)': settings.warmupS,
    'samples per latency figure': settings.samples,
    'load generator': `autocannon, keep-alive, pipelining 1, in the bench process`,
    'server env': SERVER_ENV,
    'search index in the phases before the search phase': process.env.KNOWLEDGE_SEARCH ?? 'on (the default)',
    'git plumbing durability': `git ${FSYNC_CONFIG.join(' ')}`,
  },
  machine,
  fixtures: fixtureRows,
  figures,
  raw,
  problems,
};
const file = await writeReport(settings.outDir, report);
process.stdout.write(renderMarkdown(report));
progress(`results: ${file} (and ${join(settings.outDir, 'latest.json')})`);
await rm(workDir, { recursive: true, force: true });
process.exit(exitCode);
