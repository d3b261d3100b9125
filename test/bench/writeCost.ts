/**
 * The write figures of issue 17 alone, before and after in the same run: durable PUTs (each its own
 * commit) from `--writers` clients against our server, against the server of another checkout
 * (`--baseline`, built), and, with `--git`, the git plumbing anchor (commitLoops.ts) on a copy of
 * the same fixture; for each of `--items` (comma separated), in rotating rounds of `--duration`
 * seconds. Prints commits/s and the server's CPU per commit (its own and its finished git
 * children's, from /proc): on a shared machine the CPU per commit is the figure to compare.
 *
 *   npm run build && npx tsx test/bench/writeCost.ts [--items 1000,10000] [--writers 1] [--duration 8]
 *     [--rounds 3] [--baseline <checkout>] [--git] [--repack 0]
 *
 * `--env NAME=VALUE` adds a contender: this checkout's server with that variable in its environment (e.g.
 * `--env MALLOC_ARENA_MAX=2`), in the same rounds.
 * `--repack 0` sets KNOWLEDGE_AUTO_REPACK_OBJECTS=0 (no automatic repack: the write path alone).
 * `PROFILE=1` profiles the servers (cpuProfile.mjs) into .tmp/bench/profiles/: one profile of the start
 * and warm-up, then one of the rounds (the newer file).
 */
import { Agent } from 'node:http';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { mkdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { commitCount } from '../support/git.js';
import { runGitPlumbing } from './anchors/commitLoops.js';
import { copyFixture, ensureFixture, gitdirOf, itemPath, type Fixture } from './fixtures.js';
import { cpuSecondsOf, loadAverage, UNPINNED } from './machine.js';
import { stopServer } from './ours.js';
import { startOurServer, type Served } from './processes.js';
import { putItem } from './putRequest.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const ITEMS = (options.text('--items') ?? '1000,10000').split(',').map(Number);
const WRITERS = options.number('--writers', 1);
const DURATION_S = options.number('--duration', 8);
const ROUNDS = options.number('--rounds', 3);
const BASELINE = options.text('--baseline');
const REPACK = options.text('--repack');
const EXTRA_ENV = options.variable('--env');
const WITH_GIT = process.argv.includes('--git');

interface Round {
  commitsPerSecond: number;
  /** Server CPU (its own, its children's) per commit, ms. */
  cpuMs: number;
  childMs: number;
  /** The server's own kernel time per commit, ms (part of `cpuMs`). */
  systemMs: number;
  load: number;
  commits: number;
  /** Pack bytes written per commit (meaningful with `--repack 0`). */
  packBytesPerCommit: number;
  /** Packs that appeared in the round: group commits, when nothing repacks (`--repack 0`). */
  packs: number;
}

async function packCount(gitdir: string): Promise<number> {
  return (await packFiles(gitdir)).length;
}

async function packFiles(gitdir: string): Promise<string[]> {
  return (await readdir(join(gitdir, 'objects', 'pack'))).filter((n) => n.endsWith('.pack')).map((n) => join(gitdir, 'objects', 'pack', n));
}

/** Bytes of the packs in `gitdir` (all of them: with `--repack 0`, the round's are the growth). */
async function packBytes(gitdir: string): Promise<number> {
  let total = 0;
  // A repack may remove a listed pack before it is measured.
  for (const f of await packFiles(gitdir)) total += (await stat(f).catch(() => ({ size: 0 }))).size;
  return total;
}

const put = (agent: Agent, url: string, key: string, path: string, content: string): Promise<number> => putItem({ url, key, path, content, agent });

let serial = 0;

async function putRound(s: Served, fixture: Fixture, dataDir: string): Promise<Round> {
  const agent = new Agent({ keepAlive: true, maxSockets: WRITERS });
  const gitdir = gitdirOf(dataDir);
  const before = await commitCount(gitdir);
  const packs0 = await packCount(gitdir);
  const bytes0 = await packBytes(gitdir);
  const cpu0 = await cpuSecondsOf(s.pid);
  const t0 = performance.now();
  const until = t0 + DURATION_S * 1000;
  let ok = 0;
  const writer = async (): Promise<void> => {
    while (performance.now() < until) {
      const i = serial++;
      const k = (i * 7919) % fixture.items;
      const status = await put(agent, s.url, fixture.key, itemPath(k), `# Item ${k}\n\nPUT #${i} of benchmark item ${k}.\n`);
      if (status !== 200) throw new Error(`PUT: ${status}`);
      ok++;
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, writer));
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = await cpuSecondsOf(s.pid);
  agent.destroy();
  const commits = (await commitCount(gitdir)) - before;
  if (commits !== ok) throw new Error(`${ok} PUTs answered 200, ${commits} commits made`);
  return {
    commitsPerSecond: commits / seconds,
    commits,
    cpuMs: ((cpu1.self - cpu0.self + cpu1.children - cpu0.children) * 1000) / commits,
    childMs: ((cpu1.children - cpu0.children) * 1000) / commits,
    systemMs: ((cpu1.system - cpu0.system) * 1000) / commits,
    load: await loadAverage(),
    packs: (await packCount(gitdir)) - packs0,
    packBytesPerCommit: ((await packBytes(gitdir)) - bytes0) / commits,
  };
}

const profiles = join(process.cwd(), '.tmp', 'bench', 'profiles');
if (process.env.PROFILE) mkdirSync(profiles, { recursive: true });
const profile: Record<string, string> = process.env.PROFILE ? { NODE_OPTIONS: `--import ${pathToFileURL(join(import.meta.dirname, 'cpuProfile.mjs')).href}`, CPU_PROFILE_DIR: profiles } : {};
const env: Record<string, string> = { KNOWLEDGE_SEARCH: 'off', ...(REPACK !== undefined ? { KNOWLEDGE_AUTO_REPACK_OBJECTS: REPACK } : {}), ...profile };
const work = join(process.cwd(), '.tmp', 'bench', 'writecost');
console.log(`writers ${WRITERS}, ${DURATION_S} s rounds × ${ROUNDS}, repack ${REPACK ?? 'default'}, started ${new Date().toISOString()}`);
for (const items of ITEMS) {
  const fixture = await ensureFixture({ items, hotVersions: 0 });
  const contenders: Array<{ name: string; cli?: string; env?: Record<string, string> }> = [
    { name: 'ours' },
    ...(EXTRA_ENV ? [{ name: `ours ${EXTRA_ENV.name}=${EXTRA_ENV.value}`, env: { [EXTRA_ENV.name]: EXTRA_ENV.value } }] : []),
    ...(BASELINE ? [{ name: 'before', cli: join(BASELINE, 'dist/src/cli/main.js') }] : []),
  ];
  const servers: Array<{ name: string; served: Served; dataDir: string; rounds: Round[] }> = [];
  const git: number[] = [];
  try {
    for (const c of contenders) {
      const dataDir = await copyFixture(fixture, join(work, `${items}-${c.name.replace(/\W+/g, '-')}`));
      const served = await startOurServer({ dataDir, pinning: UNPINNED, env: { ...env, ...c.env }, ...(c.cli ? { cli: c.cli } : {}) });
      // The first PUT opens the organization: not timed.
      await put(new Agent(), served.url, fixture.key, itemPath(0), 'warm-up\n');
      servers.push({ name: c.name, served, dataDir, rounds: [] });
    }
    if (process.env.PROFILE) {
      // The profile of the start and warm-up is written now; the one of the rounds at the end.
      for (const s of servers) process.kill(s.served.pid, 'SIGUSR2');
      await new Promise((r) => setTimeout(r, 2_000));
    }
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? servers : [...servers].reverse();
      for (const s of order) {
        const r = await putRound(s.served, fixture, s.dataDir);
        s.rounds.push(r);
        console.log(`${items} items, round ${round}, ${s.name}: ${r.commitsPerSecond.toFixed(1)} commits/s, CPU ${r.cpuMs.toFixed(2)} ms/commit (children ${r.childMs.toFixed(2)}, kernel ${r.systemMs.toFixed(2)}), ${REPACK === '0' ? `${(r.commits / Math.max(1, r.packs)).toFixed(1)} commits per group commit, ${(r.packBytesPerCommit / 1024).toFixed(1)} KiB of pack per commit, ` : ''}load ${r.load}`);
      }
      if (WITH_GIT) {
        const dir = await copyFixture(fixture, join(work, `${items}-git`));
        const r = await runGitPlumbing({ gitdir: gitdirOf(dir), items, durationS: DURATION_S, pinning: UNPINNED });
        git.push(r.commitsPerSecond);
        console.log(`${items} items, round ${round}, git plumbing: ${r.commitsPerSecond.toFixed(1)} commits/s, load ${await loadAverage()}`);
        await rm(dir, { recursive: true, force: true });
      }
    }
    if (process.env.PROFILE) {
      for (const s of servers) process.kill(s.served.pid, 'SIGUSR2');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  } finally {
    for (const s of servers) await stopServer(s.served);
  }
  const gitBest = git.length ? Math.max(...git) : NaN;
  for (const s of servers) {
    const best = Math.max(...s.rounds.map((r) => r.commitsPerSecond));
    const cpu = Math.min(...s.rounds.map((r) => r.cpuMs));
    const ratio = WITH_GIT ? `, ${(best / gitBest).toFixed(2)}× git plumbing (${gitBest.toFixed(1)} commits/s)` : '';
    // A repack's CPU is counted when its git exits, in whichever round that is: over all rounds, the children's share per commit is steadier.
    const commits = s.rounds.reduce((sum, r) => sum + r.commits, 0);
    const childAll = s.rounds.reduce((sum, r) => sum + r.childMs * r.commits, 0) / commits;
    const selfLeast = Math.min(...s.rounds.map((r) => r.cpuMs - r.childMs));
    console.log(`${items} items, ${s.name}: best ${best.toFixed(1)} commits/s, least CPU ${cpu.toFixed(2)} ms/commit${ratio}; server alone least ${selfLeast.toFixed(2)}, git children over all rounds ${childAll.toFixed(2)} ms/commit`);
  }
  for (const s of servers) await rm(s.dataDir, { recursive: true, force: true });
}
