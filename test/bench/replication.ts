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
 *
 * Run with `npm run build && npx tsx test/bench/replication.ts [seconds] [rounds]` (defaults 20, 2).
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

async function round(kind: Kind): Promise<Round> {
  const tmp = await tmpDir('ks-bench-repl');
  const where = process.env.BENCH_MIRROR_DIR;
  const mirrorBase = where ? { dir: await mkdtemp(`${where}/ks-bench-mirror-`), cleanup: (): Promise<void> => rm(mirrorBase?.dir ?? '', { recursive: true, force: true }) } : undefined;
  let daemon: GitDaemon | undefined;
  const mirror = kind === 'mirror';
  try {
    // LOG_LEVEL error: a mirror that is down is logged at warn, once per change of its error.
    const env: Record<string, string> = { KNOWLEDGE_RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'error' };
    if (mirror) {
      daemon = await GitDaemon.start(mirrorBase?.dir ?? tmp.dir);
      await daemon.create('default.git');
      env.KNOWLEDGE_REPLICATE = daemon.url('{org}.git');
    }
    if (kind === 'down') env.KNOWLEDGE_REPLICATE = `git://127.0.0.1:${await freePort()}/{org}.git`;
    const server = await spawnServe(`${tmp.dir}/data`, 30_000, env);
    const key = server.adminKey as string;
    const gitdir = `${tmp.dir}/data/orgs/default.git`;
    let n = 0;
    const next = (): { method: 'PUT'; path: string; body: string } => {
      const i = n++;
      return { method: 'PUT', path: `/api/v1/knowledge/items/bench/w${i % WRITERS}/item-${i % 500}.md`, body: JSON.stringify({ content: `version ${i} of a note written under load\n` }) };
    };
    // Warm-up: a second of load, then the mirror (if any) catches up before the measured run.
    await runLoad({ url: server.url, connections: WRITERS, durationS: 1, key, next });
    if (mirror) {
      for (let i = 0; i < CATCH_UP_LIMIT_MS / SAMPLE_MS && (await mirrorStatus(server, key))?.lagCommits !== 0; i++) await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
    const pushesBefore = kind !== 'none' ? await pushesOf(server, 'pushed') : 0;
    const failedBefore = kind !== 'none' ? (await pushesOf(server, 'failed')) + (await pushesOf(server, 'rejected')) : 0;
    const commitsBefore = await commitCount(gitdir);
    const during: Sample[] = [];
    const started = performance.now();
    let sampling = kind !== 'none';
    const sampler = (async () => {
      while (sampling) {
        const at = performance.now() - started;
        const s = await mirrorStatus(server, key);
        if (s) during.push({ at, lagCommits: s.lagCommits, lagSeconds: s.lagSeconds, state: s.state });
        await new Promise((r) => setTimeout(r, Math.max(0, SAMPLE_MS - (performance.now() - started - at))));
      }
    })();
    const load = await runLoad({ url: server.url, connections: WRITERS, durationS: SECONDS, key, serverPid: server.pid, next });
    const loadEnded = performance.now();
    const commits = (await commitCount(gitdir)) - commitsBefore;
    let catchUpMs = NaN;
    if (mirror) {
      const limit = loadEnded + CATCH_UP_LIMIT_MS;
      for (;;) {
        const last = during[during.length - 1];
        if (last && last.at > loadEnded - started && last.lagCommits === 0) {
          catchUpMs = last.at - (loadEnded - started);
          break;
        }
        if (performance.now() > limit) throw new Error(`the mirror did not catch up within ${CATCH_UP_LIMIT_MS} ms`);
        await new Promise((r) => setTimeout(r, SAMPLE_MS / 2));
      }
      sampling = false;
      await sampler;
      const node = (await git(['rev-parse', 'main'], { gitdir })).trim();
      const mirrored = (await git(['rev-parse', 'main'], { gitdir: `${mirrorBase?.dir ?? tmp.dir}/default.git` })).trim();
      if (node !== mirrored) throw new Error(`the mirror is at ${mirrored}, the node at ${node}`);
    }
    const pushes = kind !== 'none' ? (await pushesOf(server, 'pushed')) - pushesBefore : 0;
    const failedPushes = kind !== 'none' ? (await pushesOf(server, 'failed')) + (await pushesOf(server, 'rejected')) - failedBefore : 0;
    sampling = false;
    await sampler;
    await server.kill('SIGTERM');
    return { kind, load, commitsPerSecond: commits / load.durationS, during: during.filter((s) => s.at <= loadEnded - started), catchUpMs, pushes, failedPushes };
  } finally {
    await daemon?.stop();
    await tmp.cleanup();
    await mirrorBase?.cleanup();
  }
}

await ensureBuilt();
try {
  console.log(`replication bench: ${WRITERS} writers, ${SECONDS} s per run, ${ROUNDS} rounds; mirror repository in ${process.env.BENCH_MIRROR_DIR ?? os.tmpdir()}; ${os.cpus().length} cores; load average at start ${loadAverage()}`);
  const rounds: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const kind of KINDS) {
      const result = await round(kind);
      rounds.push(result);
      console.log(`round ${r + 1}, ${LABEL[kind]}: ${describeLoad(result.load)}; load average ${loadAverage()}`);
    }
  }
  console.log('');
  console.log('| run | mirror | commits/s | PUT p50 ms | PUT p99 ms | lag commits p50 / p95 / max | lag s p50 / p95 / max | caught up after load (s) | pushes (failed) |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  rounds.forEach((r, i) => {
    const commits = stats(r.during.map((s) => s.lagCommits));
    const secs = stats(r.during.map((s) => s.lagSeconds));
    const caughtUp = r.kind === 'mirror' ? (r.catchUpMs / 1000).toFixed(2) : '–';
    const lag =
      r.kind !== 'none'
        ? `${commits.median} / ${commits.p95} / ${commits.max} | ${secs.median.toFixed(2)} / ${secs.p95.toFixed(2)} / ${secs.max.toFixed(2)} | ${caughtUp} | ${r.pushes} (${r.failedPushes})`
        : '– | – | – | –';
    console.log(`| ${Math.floor(i / KINDS.length) + 1} | ${LABEL[r.kind]} | ${r.commitsPerSecond.toFixed(0)} | ${r.load.latencyMs.p50} | ${r.load.latencyMs.p99} | ${lag} |`);
  });
  console.log(`\nlag sampled from GET /replication every ${SAMPLE_MS} ms during the load (${rounds.filter((r) => r.kind !== 'none').map((r) => r.during.length).join(', ')} samples); load average at the end ${loadAverage()}`);
} finally {
  await killAllChildren();
}
