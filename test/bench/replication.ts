/**
 * Replication under the 16-writer load: commits/s of one node with no mirror, with every group commit
 * pushed to a mirror (a real `git daemon` on 127.0.0.1, receive-pack on), and with a mirror that is down
 * (connection refused: retries with backoff); the mirror's lag sampled from GET /replication every 100 ms
 * during the load and after it, until the mirror has caught up. The mirror shares this machine's CPUs;
 * BENCH_MIRROR_DIR puts its repository elsewhere (e.g. /dev/shm, so that its writes do not share the node's
 * disk, as a mirror on another machine would not).
 * The built server runs as a child process (`knowledge-store serve`); autocannon drives 16 connections,
 * each with one PUT in flight, every PUT a new version of one of 500 items (each one commit).
 * Rounds alternate (no mirror, mirror, mirror down) so that drift in a shared machine's load falls on both alike.
 * Then what one push costs the node: one writer, a push per commit, server CPU per PUT with and without a mirror.
 *
 * Run with `npm run build && npx tsx test/bench/replication.ts [seconds] [rounds]` (defaults 20, 2); with
 * PUSH_COST_ONLY=1, the one-writer figure alone (server, git runner and git CPU per PUT).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { ensureBuilt, killAllChildren, spawnServe, type ServeChild } from '../support/child.js';
import { freePort, GitDaemon } from '../support/gitDaemon.js';
import { git } from '../support/git.js';
import { tmpDir } from '../support/tmp.js';
import { describeLoad, runLoad, type LoadResult } from './load.js';
import { cpuSecondsOf, gitCpuSecondsOf, gitRunnerOf } from './machine.js';
import { stats } from './timing.js';

const SECONDS = Number(process.argv[2] ?? 20);
const ROUNDS = Number(process.argv[3] ?? 2);
const WRITERS = 16;
const SAMPLE_MS = 100;
const CATCH_UP_LIMIT_MS = 120_000;

interface Sample {
  /** Milliseconds since the load started. */
  at: number;
  lagCommits: number;
  lagSeconds: number;
  state: string;
}

type Kind = 'none' | 'mirror' | 'down';
const KINDS: readonly Kind[] = ['none', 'mirror', 'down'];
const LABEL: Record<Kind, string> = { none: 'no mirror', mirror: 'mirror', down: 'mirror down' };

interface Round {
  kind: Kind;
  load: LoadResult;
  commitsPerSecond: number;
  during: Sample[];
  /** Milliseconds from the end of the load until the mirror had every commit (NaN without a mirror). */
  catchUpMs: number;
  pushes: number;
  failedPushes: number;
}

/** The server's CPU per commit over the run, in ms, and its finished git children's (pushes, repacks). */
function cpuPerCommit(r: Round): string {
  const commits = r.commitsPerSecond * r.load.durationS;
  const per = (percent: number): string => ((percent / 100) * r.load.durationS * 1000 / commits).toFixed(2);
  return `${per(r.load.serverCpuPercent)} (+ ${per(r.load.serverChildrenCpuPercent)})`;
}

const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function mirrorStatus(server: ServeChild, key: string): Promise<{ lagCommits: number; lagSeconds: number; state: string } | undefined> {
  const res = await fetch(`${server.url}/api/v1/knowledge/replication`, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { data?: { mirrors?: Array<{ lagCommits: number; lagSeconds: number; state: string }> } };
  return body.data?.mirrors?.[0];
}

async function commitCount(gitdir: string): Promise<number> {
  return Number((await git(['rev-list', '--count', 'main'], { gitdir })).trim());
}

/** `knowledge_replication_pushes_total{result="..."}` from /metrics. */
async function pushesOf(server: ServeChild, result: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = new RegExp(`^knowledge_replication_pushes_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** A node (the built server) with a mirror of `kind`, for the time `fn` runs; everything is removed after. */
async function withNode<T>(kind: Kind, extraEnv: Record<string, string>, fn: (node: { server: ServeChild; key: string; gitdir: string; mirrorDir: string | null }) => Promise<T>): Promise<T> {
  const tmp = await tmpDir('ks-bench-repl');
  const where = process.env.BENCH_MIRROR_DIR;
  const mirrorBase = where ? await mkdtemp(`${where}/ks-bench-mirror-`) : tmp.dir;
  let daemon: GitDaemon | undefined;
  let server: ServeChild | undefined;
  try {
    // LOG_LEVEL error: a mirror that is down is logged at warn, once per change of its error.
    const env: Record<string, string> = { KNOWLEDGE_RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'error', ...extraEnv };
    if (kind === 'mirror') {
      daemon = await GitDaemon.start(mirrorBase);
      await daemon.create('default.git');
      env.KNOWLEDGE_REPLICATE = daemon.url('{org}.git');
    }
    if (kind === 'down') env.KNOWLEDGE_REPLICATE = `git://127.0.0.1:${await freePort()}/{org}.git`;
    server = await spawnServe(`${tmp.dir}/data`, 30_000, env);
    const result = await fn({ server, key: server.adminKey as string, gitdir: `${tmp.dir}/data/orgs/default.git`, mirrorDir: daemon ? `${mirrorBase}/default.git` : null });
    await server.kill('SIGTERM');
    return result;
  } finally {
    await server?.kill('SIGKILL');
    await daemon?.stop();
    await tmp.cleanup();
    if (where) await rm(mirrorBase, { recursive: true, force: true });
  }
}

async function untilCaughtUp(server: ServeChild, key: string): Promise<void> {
  for (let i = 0; i < CATCH_UP_LIMIT_MS / SAMPLE_MS && (await mirrorStatus(server, key))?.lagCommits !== 0; i++) await new Promise((r) => setTimeout(r, SAMPLE_MS));
}

function round(kind: Kind): Promise<Round> {
  return withNode(kind, {}, async ({ server, key, gitdir, mirrorDir }) => {
    let n = 0;
    const next = (): { method: 'PUT'; path: string; body: string } => {
      const i = n++;
      return { method: 'PUT', path: `/api/v1/knowledge/items/bench/w${i % WRITERS}/item-${i % 500}.md`, body: JSON.stringify({ content: `version ${i} of a note written under load\n` }) };
    };
    // Warm-up: a second of load, then the mirror (if any) catches up before the measured run.
    await runLoad({ url: server.url, connections: WRITERS, durationS: 1, key, next });
    if (mirrorDir) await untilCaughtUp(server, key);
    const replicating = kind !== 'none';
    const failed = async (): Promise<number> => (await pushesOf(server, 'failed')) + (await pushesOf(server, 'rejected'));
    const pushesBefore = replicating ? await pushesOf(server, 'pushed') : 0;
    const failedBefore = replicating ? await failed() : 0;
    const commitsBefore = await commitCount(gitdir);
    const during: Sample[] = [];
    const started = performance.now();
    let sampling = replicating;
    const sampler = (async () => {
      while (sampling) {
        const at = performance.now() - started;
        const s = await mirrorStatus(server, key);
        if (s) during.push({ at, lagCommits: s.lagCommits, lagSeconds: s.lagSeconds, state: s.state });
        await new Promise((r) => setTimeout(r, Math.max(0, SAMPLE_MS - (performance.now() - started - at))));
      }
    })();
    const load = await runLoad({ url: server.url, connections: WRITERS, durationS: SECONDS, key, serverPid: server.pid, next });
    const loadEnded = performance.now() - started;
    const commits = (await commitCount(gitdir)) - commitsBefore;
    let catchUpMs = NaN;
    if (mirrorDir) {
      const limit = performance.now() + CATCH_UP_LIMIT_MS;
      for (;;) {
        const last = during[during.length - 1];
        if (last && last.at > loadEnded && last.lagCommits === 0) {
          catchUpMs = last.at - loadEnded;
          break;
        }
        if (performance.now() > limit) throw new Error(`the mirror did not catch up within ${CATCH_UP_LIMIT_MS} ms`);
        await new Promise((r) => setTimeout(r, SAMPLE_MS / 2));
      }
      const node = (await git(['rev-parse', 'main'], { gitdir })).trim();
      const mirrored = (await git(['rev-parse', 'main'], { gitdir: mirrorDir })).trim();
      if (node !== mirrored) throw new Error(`the mirror is at ${mirrored}, the node at ${node}`);
    }
    sampling = false;
    await sampler;
    const pushes = replicating ? (await pushesOf(server, 'pushed')) - pushesBefore : 0;
    const failedPushes = replicating ? (await failed()) - failedBefore : 0;
    return { kind, load, commitsPerSecond: commits / load.durationS, during: during.filter((s) => s.at <= loadEnded), catchUpMs, pushes, failedPushes };
  });
}

/**
 * What one push costs the node: one writer, PUTs 20 ms apart, so that each commit gets a push of its own;
 * the server's CPU per PUT with and without a mirror.
 */
function pushCost(kind: Kind, puts: number): Promise<{ cpuMsPerPut: number; runnerMsPerPut: number; gitMsPerPut: number; pushes: number }> {
  // No least interval here, whatever the environment says: every commit is to get its own push.
  return withNode(kind, { KNOWLEDGE_REPLICATE_INTERVAL_MS: '0' }, async ({ server, key }) => {
    const put = async (i: number): Promise<void> => {
      const res = await fetch(`${server.url}/api/v1/knowledge/items/one/item-${i % 50}.md`, { method: 'PUT', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ content: `one writer, version ${i}\n` }) });
      if (res.status !== 200) throw new Error(`PUT: ${res.status}`);
      await res.text();
    };
    for (let i = 0; i < 50; i++) await put(i);
    if (kind === 'mirror') await untilCaughtUp(server, key);
    const pushesBefore = await pushesOf(server, 'pushed');
    const runner = await gitRunnerOf(server.pid);
    const runnerBefore = runner === null ? { self: 0 } : await cpuSecondsOf(runner);
    const gitBefore = await gitCpuSecondsOf(server.pid, runner);
    const before = await cpuSecondsOf(server.pid);
    for (let i = 0; i < puts; i++) {
      await put(i);
      await new Promise((r) => setTimeout(r, 20));
    }
    if (kind === 'mirror') await untilCaughtUp(server, key);
    const after = await cpuSecondsOf(server.pid);
    const runnerAfter = runner === null ? { self: 0 } : await cpuSecondsOf(runner);
    const gitAfter = await gitCpuSecondsOf(server.pid, runner);
    const runnerMs = (runnerAfter.self - runnerBefore.self) * 1000;
    return {
      cpuMsPerPut: ((after.self - before.self) * 1000) / puts,
      runnerMsPerPut: runnerMs / puts,
      // git started by the server itself (an older build) or by the runner, once reaped
      gitMsPerPut: ((gitAfter - gitBefore) * 1000 - runnerMs) / puts,
      pushes: (await pushesOf(server, 'pushed')) - pushesBefore,
    };
  });
}

await ensureBuilt();
try {
  console.log(`replication bench: ${WRITERS} writers, ${SECONDS} s per run, ${ROUNDS} rounds; mirror repository in ${process.env.BENCH_MIRROR_DIR ?? os.tmpdir()}; KNOWLEDGE_REPLICATE_INTERVAL_MS ${process.env.KNOWLEDGE_REPLICATE_INTERVAL_MS || '0 (default)'}; ${os.cpus().length} cores; load average at start ${loadAverage()}`);
  const rounds: Round[] = [];
  // PUSH_COST_ONLY=1: only what one push costs the node (the one-writer figure), not the 16-writer rounds.
  for (let r = 0; r < (process.env.PUSH_COST_ONLY === '1' ? 0 : ROUNDS); r++) {
    for (const kind of KINDS) {
      const result = await round(kind);
      rounds.push(result);
      console.log(`round ${r + 1}, ${LABEL[kind]}: ${describeLoad(result.load)}; load average ${loadAverage()}`);
    }
  }
  console.log('');
  console.log('| run | mirror | commits/s | server CPU ms/commit (+ git children) | PUT p50 ms | PUT p99 ms | lag commits p50 / p95 / max | lag s p50 / p95 / max | caught up after load (s) | pushes (failed) |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  rounds.forEach((r, i) => {
    const commits = stats(r.during.map((s) => s.lagCommits));
    const secs = stats(r.during.map((s) => s.lagSeconds));
    const caughtUp = r.kind === 'mirror' ? (r.catchUpMs / 1000).toFixed(2) : '–';
    const lag =
      r.kind !== 'none'
        ? `${commits.median} / ${commits.p95} / ${commits.max} | ${secs.median.toFixed(2)} / ${secs.p95.toFixed(2)} / ${secs.max.toFixed(2)} | ${caughtUp} | ${r.pushes} (${r.failedPushes})`
        : '– | – | – | –';
    console.log(`| ${Math.floor(i / KINDS.length) + 1} | ${LABEL[r.kind]} | ${r.commitsPerSecond.toFixed(0)} | ${cpuPerCommit(r)} | ${r.load.latencyMs.p50} | ${r.load.latencyMs.p99} | ${lag} |`);
  });
  const costs: string[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const kind of ['none', 'mirror'] as const) {
      const c = await pushCost(kind, 300);
      costs.push(`${LABEL[kind]} ${c.cpuMsPerPut.toFixed(2)} ms (git runner ${c.runnerMsPerPut.toFixed(2)}, git ${c.gitMsPerPut.toFixed(2)})${kind === 'mirror' ? ` (${c.pushes} pushes)` : ''}`);
    }
  }
  console.log(`\none writer, 300 PUTs 20 ms apart (a push per commit): server CPU per PUT ${costs.join('; ')}; load average ${loadAverage()}`);
  console.log(`lag sampled from GET /replication every ${SAMPLE_MS} ms during the load (${rounds.filter((r) => r.kind !== 'none').map((r) => r.during.length).join(', ')} samples); load average at the end ${loadAverage()}`);
} finally {
  await killAllChildren();
}
