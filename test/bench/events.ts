/**
 * The SSE target: 200 listeners on GET /events add less than 5% to PUT latency. The built server runs as a
 * child process, the 200 listeners in another (eventListeners.ts); this process alternates rounds of sequential PUTs with no listener and with 200 open
 * streams (each receiving every commit), and prints PUT p50/p95 for both and the fan-out lag (PUT answered
 * → the last of the 200 listeners has the event). Rounds alternate so that drift in a shared machine's
 * load falls on both sides alike. Each listener must get every commit of its round, once, in commit order
 * (checked against main's log). A round with listeners is timed from the first commit every stream has got:
 * the streams' opening (their handover to the fan-out process) is measured apart.
 *
 * The server writes the streams from a fan-out process of its own (README, Events): its CPU is measured
 * apart (the server's figure is then the writer's process alone).
 *
 * Run with `npx tsx test/bench/events.ts [rounds] [putsPerRound] [listeners]` (defaults 6, 100, 200);
 * `PROFILE=1` also writes the CPU profiles of the server and of its fan-out process into .tmp/bench/profiles/.
 * The listeners keep their reads and parse them after each round (`LISTENERS_PARSE=live`: as they come; see
 * eventListeners.ts), so that their parsing does not compete with the timed PUTs for this machine's cores.
 * `KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND=4000` (passed on to the server) gives 200 streams the 50 ms
 * wake-up gap of a few, as before the gap grew with the streams.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { execFileSync, fork, type Serializable } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { schedulingPolicyOf } from '../../src/http/events/fanOutScheduling.js';
import { ensureBuilt, killAllChildren, spawnServe } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { GC_ON_SIGNAL, noJournalNote, threadsMs } from './machine.js';
import { putItem } from './putRequest.js';

const ROUNDS = Number(process.argv[2] ?? 6);
const PUTS = Number(process.argv[3] ?? 100);
const LISTENERS = Number(process.argv[4] ?? 200);
const TARGET = 0.05;
/** How long a full GC of the server and its fan-out process is given before a round (see `pause`). */
const GC_MS = 500;
/** The time between two timed rounds (see `pause`): longer than the opening of 200 listeners takes. */
const PAUSE_MS = Number(process.env.PAUSE_MS ?? 2_000);
/**
 * `LISTENERS_NICE=19` runs the listeners' process at that niceness. The 200 listeners stand in for clients on other
 * machines; on this 2-core machine their process (about 1 ms of CPU per PUT to read 200 streams) otherwise competes
 * with the server and the timing client for the cores, and its bursts after each wake-up land on the PUTs timed then.
 * Niced, it still reads every event (the lag is measured), but yields the CPU to them. 0 (the default) leaves it be.
 */
const LISTENERS_NICE = Number(process.env.LISTENERS_NICE ?? 0);
/**
 * `PIN=1`: the server and its fan-out process on CPU 0, this client and the listeners on CPU 1 (with taskset), so
 * that what the listeners' own process costs the machine does not fall on the server's core.
 */
const PIN = process.env.PIN === '1';
/**
 * `PIN_FANOUT=1`: the fan-out process on CPU 1 alone (taskset once it has started). With PIN=1 the server is then alone
 * on CPU 0, so that what the listeners cost the server's own process is told apart from what the fan-out process
 * beside it does to its core; without, the server's threads still go where the kernel puts them.
 */
const PIN_FANOUT = process.env.PIN_FANOUT === '1';
/**
 * `LISTENERS_SCHED=idle` puts the listeners' process in Linux's SCHED_IDLE class (chrt), a stronger form of
 * LISTENERS_NICE: the stand-ins for clients on other machines then take only a core nobody else wants. The fan-out
 * process's own class is the server's setting (KNOWLEDGE_EVENT_FANOUT_PRIORITY, passed through from this environment).
 */
const LISTENERS_SCHED = process.env.LISTENERS_SCHED;
/** `TRACE_GC=1`: the server prints each garbage collection (traceGc.cjs); counted per kind of round at the end. */
const TRACE_GC = process.env.TRACE_GC === '1';
/** Resamplings of the rounds for the interval printed beside the added p50 and p95 (see `interval`). */
const RESAMPLES = 2_000;
/** `PROFILE=1` profiles the server (cpuProfile.mjs), warm-up and both kinds of round included. */
const PROFILES = join(process.cwd(), '.tmp', 'bench', 'profiles');

/** One keep-alive connection for the PUTs, apart from the streams. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One timed PUT on the shared connection: its latency in ms (any answer but 200 fails the bench). */
async function put(base: string, key: string, path: string, content: string): Promise<number> {
  const started = performance.now();
  const status = await putItem({ url: base, key, path, content, agent });
  if (status !== 200) throw new Error(`PUT ${path}: ${status}`);
  return performance.now() - started;
}

/** What the listeners got: `ids[i][k]`, the id of stream i's k-th event, and `arrivals[i][k]`, when it came. */
interface Received {
  ids: string[][];
  arrivals: number[][];
}

/** The listeners, in their own process (see eventListeners.ts). */
interface Listeners {
  pid: number;
  received(): Promise<Received>;
  close(): Promise<void>;
}

async function openListeners(base: string, key: string, count: number): Promise<Listeners> {
  const child = fork(fileURLToPath(new URL('./eventListeners.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (LISTENERS_NICE !== 0) setPriority(child.pid as number, LISTENERS_NICE);
  if (LISTENERS_SCHED === 'idle') execFileSync('chrt', ['-a', '--idle', '-p', '0', String(child.pid)], { stdio: 'ignore' });
  const reply = <T>(send: unknown): Promise<T> =>
    new Promise((resolve, reject) => {
      const exited = (code: number | null): void => reject(new Error(`listeners exited with ${code}`));
      child.once('exit', exited);
      child.once('message', (m) => {
        child.off('exit', exited);
        resolve(m as T);
      });
      child.send(send as Serializable);
    });
  await reply<'ready'>({ open: { base, key, count } });
  return {
    pid: child.pid as number,
    received: () => reply<Received>('report'),
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send('close');
      }),
  };
}

/** Waits until every listener has `count` events (or more: the caller checks), at most 10 s. */
async function everyHas(listeners: Listeners, count: number): Promise<Received> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const received = await listeners.received();
    if (received.ids.every((ids) => ids.length >= count)) return received;
    if (performance.now() > deadline) throw new Error(`listeners did not get ${count} events within 10 s: ${JSON.stringify(received.ids.map((a) => a.length).slice(0, 20))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The server's CPU time so far (user + system), in ms, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The server's system (kernel) CPU time so far, in ms: on loopback the socket writes' delivery is charged here. */
function sysMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[12]) * 10;
}

/** The server's event fan-out process (none for a build without one, or with KNOWLEDGE_EVENT_FANOUT=server). */
function fanOutOf(pid: number): number | undefined {
  return childrenOf(pid).find((child) => readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('fanOutChild'));
}

/** Linux's name of a scheduling class as schedulingPolicyOf reads it from /proc (the server's own reader). */
const POLICY_NAMES = { idle: 'SCHED_IDLE', normal: 'SCHED_OTHER', other: 'another class' } as const;

/** V8's --trace-gc lines in `text`, counted by kind (Scavenge, Mark-Compact, ...). */
function gcKinds(text: string, into: Map<string, number>): void {
  for (const m of text.matchAll(/ ms: ([A-Za-z-]+)/g)) into.set(m[1] as string, (into.get(m[1] as string) ?? 0) + 1);
}

function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** CPU (all, kernel) of the fan-out process so far, 0 when there is none. */
function fanOutMs(pid: number | undefined): { all: number; sys: number } {
  return pid === undefined ? { all: 0, sys: 0 } : { all: cpuMs(pid), sys: sysMs(pid) };
}

/**
 * A 95% interval of (q-quantile with listeners / q-quantile without − 1), by resampling the rounds with
 * replacement: an A/A run (`events.ts 12 100 0`) varies by about ±10% at p95 from one run to the next, so a
 * single figure alone says little about a 5% target. `paired` draws the pairs (round k of each kind, run
 * back to back): the design alternates the kinds so that the machine's drift falls on both alike, and drawing
 * the kinds apart counts that drift as if it were noise between them. Unpaired, as before, for comparison.
 */
function interval(rounds: { without: number[][]; with: number[][] }, q: number, paired: boolean): [number, number] {
  const pairs = Math.min(rounds.with.length, rounds.without.length);
  const ratios: number[] = [];
  for (let i = 0; i < RESAMPLES; i++) {
    const withDrawn: number[] = [];
    const withoutDrawn: number[] = [];
    for (let k = 0; k < pairs; k++) {
      const a = Math.floor(Math.random() * pairs);
      const b = paired ? a : Math.floor(Math.random() * pairs);
      withDrawn.push(...(rounds.with[a] as number[]));
      withoutDrawn.push(...(rounds.without[b] as number[]));
    }
    ratios.push(quantile(withDrawn, q) / quantile(withoutDrawn, q) - 1);
  }
  return [quantile(ratios, 0.025), quantile(ratios, 0.975)];
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

await ensureBuilt();
const tmp = await tmpDir('ks-bench-events');
try {
  const profile: Record<string, string> = process.env.PROFILE ? { NODE_OPTIONS: `--import ${pathToFileURL(join(import.meta.dirname, 'cpuProfile.mjs')).href}`, CPU_PROFILE_DIR: PROFILES } : {};
  if (process.env.PROFILE) mkdirSync(PROFILES, { recursive: true });
  // A full GC on SIGUSR2 before each timed round (see `pause`), unless SIGUSR2 writes the CPU profile instead.
  const gc: Record<string, string> = process.env.PROFILE ? {} : TRACE_GC ? { NODE_OPTIONS: `${GC_ON_SIGNAL.NODE_OPTIONS} --require "${join(import.meta.dirname, 'traceGc.cjs')}"` } : GC_ON_SIGNAL;
  const server = await spawnServe(tmp.dir, 15_000, { KNOWLEDGE_EVENT_STREAMS_PER_KEY: String(LISTENERS + 10), KNOWLEDGE_RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'warn', ...gc, ...profile });
  if (PIN) {
    // The server (and the fan-out process it forks at the first stream, which inherits this) on CPU 0; this
    // client and the listeners' process (forked from it) on CPU 1, as `npm run bench` pins its load generator.
    execFileSync('taskset', ['-a', '-cp', '0', String(server.pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
  }
  const key = server.adminKey as string;
  let n = 0;
  const next = (): Promise<number> => put(server.url, key, `bench/f${n % 20}/item-${n % 200}.md`, `version ${n++}\n`);
  for (let i = 0; i < 100; i++) await next(); // warm-up
  const without: number[] = [];
  const withListeners: number[] = [];
  /** The same latencies, a list per round, for the interval (resampled by round: the rounds differ more than their PUTs). */
  const roundsOf = { without: [] as number[][], with: [] as number[][] };
  const threads = { without: { main: 0, others: 0 }, with: { main: 0, others: 0 } };
  const gcs = { without: new Map<string, number>(), with: new Map<string, number>() };
  const addThreads = (into: { main: number; others: number }, t0: { main: number; others: number }): void => {
    const t1 = threadsMs(server.pid);
    into.main += t1.main - t0.main;
    into.others += t1.others - t0.others;
  };
  const lags: number[] = [];
  const cpu = { without: 0, with: 0, tail: 0, listeners: 0, listenersDuring: 0, client: 0, fanOut: 0, fanOutWithout: 0 };
  const sys = { without: 0, with: 0, fanOut: 0 };
  const opened = { server: 0, fanOut: 0, fanOutRounds: 0 };
  let chunks = 0;
  let fanOut: number | undefined;
  // Every timed round starts PAUSE_MS after the last one ended, then one untimed PUT, with listeners or without: a
  // round timed right after another ran slower than one after the listeners' opening (a second), by 10-17% at p50
  // and p95 with no listener at all (A/A, `events.ts 12 100 0`), which the figures took for the listeners' effect.
  let lastEnd = performance.now();
  let overran = 0;
  const pause = async (): Promise<void> => {
    // Of a random length, between one and two PAUSE_MS: fixed, a pair of rounds took ~5 s, the period of the kernel's
    // writeback of dirty pages, whose fsync stalls then fell on the same kind of round time after time.
    const wait = PAUSE_MS * (1 + Math.random()) - (performance.now() - lastEnd);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    else overran += 1;
    // The garbage of opening (or closing) 200 streams, in the server and its fan-out process, is collected before
    // the round, not during it: it would fall on whichever round came next (the steady state is what is timed).
    if (process.env.PROFILE) return;
    for (const pid of [server.pid, fanOut]) if (pid !== undefined) process.kill(pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, GC_MS));
  };
  const roundWithout = async (): Promise<void> => {
    await pause();
    await next();
    const c0 = cpuMs(server.pid);
    const s0 = sysMs(server.pid);
    const f0 = fanOutMs(fanOut);
    const t0 = threadsMs(server.pid);
    const out0 = server.stdout().length;
    const round: number[] = [];
    for (let i = 0; i < PUTS; i++) round.push(await next());
    lastEnd = performance.now();
    without.push(...round);
    roundsOf.without.push(round);
    addThreads(threads.without, t0);
    gcKinds(server.stdout().slice(out0), gcs.without);
    cpu.without += cpuMs(server.pid) - c0;
    sys.without += sysMs(server.pid) - s0;
    cpu.fanOutWithout += fanOutMs(fanOut).all - f0.all;
  };
  const roundWith = async (): Promise<void> => {
    const o0 = { server: cpuMs(server.pid), fanOut: fanOutMs(fanOut).all, fanOutPid: fanOut };
    const listeners = await openListeners(server.url, key, LISTENERS);
    // Started with the first stream, and kept (unless it died, which would show as a new pid).
    fanOut = fanOutOf(server.pid);
    if (PIN_FANOUT && fanOut !== undefined) execFileSync('taskset', ['-a', '-cp', '1', String(fanOut)], { stdio: 'ignore' });
    // One commit, not timed, that every listener must get: then every stream has been handed to the fan-out
    // process and stands at the head. What is timed below is the steady state the target is about (listeners
    // connected, commits coming), not the opening of 200 streams, whose cost is measured here and printed apart.
    await pause();
    await next();
    await everyHas(listeners, 1);
    opened.server += cpuMs(server.pid) - o0.server;
    if (o0.fanOutPid !== undefined && o0.fanOutPid === fanOut) {
      opened.fanOut += fanOutMs(fanOut).all - o0.fanOut;
      opened.fanOutRounds += 1;
    }
    const done: number[] = [];
    const c0 = cpuMs(server.pid);
    const s0 = sysMs(server.pid);
    const f0 = fanOutMs(fanOut);
    const l0 = cpuMs(listeners.pid);
    const b0 = cpuMs(process.pid);
    const t0 = threadsMs(server.pid);
    const out0 = server.stdout().length;
    const round: number[] = [];
    for (let i = 0; i < PUTS; i++) {
      round.push(await next());
      done.push(performance.timeOrigin + performance.now());
    }
    lastEnd = performance.now();
    withListeners.push(...round);
    roundsOf.with.push(round);
    addThreads(threads.with, t0);
    gcKinds(server.stdout().slice(out0), gcs.with);
    // The server's CPU up to the round's last PUT, as a round without listeners counts it: what follows (the last
    // wake-up's turn, and whatever the server does once its writes stop) is counted apart, as the tail.
    const c1 = cpuMs(server.pid);
    cpu.with += c1 - c0;
    cpu.listenersDuring += cpuMs(listeners.pid) - l0;
    sys.with += sysMs(server.pid) - s0;
    // Every listener must have every commit of the round (the figure is only worth something if they did).
    const { ids, arrivals } = await everyHas(listeners, 1 + PUTS);
    cpu.tail += cpuMs(server.pid) - c1;
    const f1 = fanOutMs(fanOut);
    cpu.fanOut += f1.all - f0.all;
    sys.fanOut += f1.sys - f0.sys;
    cpu.listeners += cpuMs(listeners.pid) - l0;
    cpu.client += cpuMs(process.pid) - b0;
    // ...each once, in commit order, and nothing else: the ids are the last commits of main, oldest first.
    const commits = execFileSync('git', ['--git-dir', join(tmp.dir, 'orgs', 'default.git'), 'rev-list', '-n', String(1 + PUTS), 'main'], { encoding: 'utf8' }).trim().split('\n').reverse();
    const wrong = ids.findIndex((got) => got.length !== commits.length || got.some((id, k) => id !== commits[k]));
    if (wrong !== -1) throw new Error(`listener ${wrong} got ids ${JSON.stringify(ids[wrong])}, not the round's commits in order ${JSON.stringify(commits)}`);
    // The stream writes (chunks) the listeners read: events that came in one read share their arrival time. The
    // fan-out's cost per write does not depend on how many commits each wake-up carries, its cost per PUT does.
    for (const a of arrivals) chunks += new Set(a.slice(1)).size;
    done.forEach((at, k) => lags.push(Math.max(...arrivals.map((a) => (a[k + 1] as number) - at))));
    await listeners.close();
    await new Promise((r) => setTimeout(r, 200));
  };
  for (let round = 0; round < ROUNDS; round++) {
    // Which kind goes first, drawn per round: an effect of the place in the pair (what came just before) falls on both alike.
    if (Math.random() < 0.5) {
      await roundWithout();
      await roundWith();
    } else {
      await roundWith();
      await roundWithout();
    }
  }
  const row = (label: string, v: number[]): string => `| ${label} | ${v.length} | ${quantile(v, 0.5).toFixed(2)} | ${quantile(v, 0.95).toFixed(2)} |`;
  console.log(`| listeners | PUTs | PUT p50 ms | PUT p95 ms |`);
  console.log(`|---|---|---|---|`);
  console.log(row('0', without));
  console.log(row(String(LISTENERS), withListeners));
  const d50 = quantile(withListeners, 0.5) / quantile(without, 0.5) - 1;
  const d95 = quantile(withListeners, 0.95) / quantile(without, 0.95) - 1;
  console.log(`added by ${LISTENERS} listeners: p50 ${(d50 * 100).toFixed(1)}%, p95 ${(d95 * 100).toFixed(1)}% (target < ${TARGET * 100}%: ${d50 < TARGET && d95 < TARGET ? 'met' : 'NOT met'})`);
  const pct = (v: number): string => `${(v * 100).toFixed(1)}%`;
  for (const paired of [true, false]) {
    const i50 = interval(roundsOf, 0.5, paired);
    const i95 = interval(roundsOf, 0.95, paired);
    console.log(`95% interval of the added (${paired ? 'the pairs of rounds' : 'each kind\'s rounds apart, unpaired'}, resampled ${RESAMPLES} times): p50 ${pct(i50[0])} to ${pct(i50[1])}, p95 ${pct(i95[0])} to ${pct(i95[1])}`);
  }
  if (process.env.ROUNDS_OUT) writeFileSync(process.env.ROUNDS_OUT, JSON.stringify(roundsOf));
  const perPut = (ms: number, n: number): string => (ms / n).toFixed(2);
  console.log(
    `server CPU per PUT by thread: main ${perPut(threads.without.main, without.length)} -> ${perPut(threads.with.main, withListeners.length)} ms, ` +
      `the others (GC helpers, libuv's pool) ${perPut(threads.without.others, without.length)} -> ${perPut(threads.with.others, withListeners.length)} ms`,
  );
  if (TRACE_GC) console.log(`garbage collections in the server, no listener: ${JSON.stringify(Object.fromEntries(gcs.without))}; with ${LISTENERS}: ${JSON.stringify(Object.fromEntries(gcs.with))}`);
  console.log(`server CPU per PUT: ${(cpu.without / without.length).toFixed(2)} ms with no listener, ${(cpu.with / withListeners.length).toFixed(2)} ms with ${LISTENERS} (what the listeners add to it: ${((cpu.with - cpu.without) / withListeners.length).toFixed(2)} ms per commit, of which ${((sys.with - sys.without) / withListeners.length).toFixed(2)} ms in the kernel; both counted up to each round's last PUT, and after it, until every listener had the round, ${(cpu.tail / ROUNDS).toFixed(1)} ms a round more)`);
  const fanOutPolicy = fanOut === undefined ? null : await schedulingPolicyOf(fanOut, (path) => readFile(path, 'utf8'));
  console.log(
    fanOut === undefined
      ? LISTENERS === 0
        ? 'event fan-out process: none (no stream was opened: an A/A run)'
        : 'event fan-out process: none (this build writes the streams from the server process)'
      : `event fan-out process (pid ${fanOut}, ${fanOutPolicy ? POLICY_NAMES[fanOutPolicy] : 'class unknown'}) CPU per PUT: ${(cpu.fanOut / withListeners.length).toFixed(2)} ms with ${LISTENERS} listeners (${(sys.fanOut / withListeners.length).toFixed(2)} ms in the kernel), ${(cpu.fanOutWithout / without.length).toFixed(2)} ms with none; ` +
        `per stream write ${((cpu.fanOut * 1000) / chunks).toFixed(1)} µs (${(sys.fanOut * 1000 / chunks).toFixed(1)} µs in the kernel; ${(chunks / LISTENERS / withListeners.length).toFixed(2)} writes per stream per PUT)`,
  );
  if (LISTENERS > 0) {
    console.log(
      `opening ${LISTENERS} streams (not in the figures above): server CPU ${(opened.server / ROUNDS / LISTENERS).toFixed(3)} ms per stream` +
        (opened.fanOutRounds > 0 ? `, fan-out process ${(opened.fanOut / opened.fanOutRounds / LISTENERS).toFixed(3)} ms per stream` : ''),
    );
  }
  // On a 2-core machine the listeners' own parsing competes with the server: it is shown, so that a result skewed by it is seen.
  console.log(`other processes' CPU per PUT with ${LISTENERS} listeners: listeners process ${(cpu.listeners / withListeners.length).toFixed(2)} ms (${(cpu.listenersDuring / withListeners.length).toFixed(2)} ms of it while the PUTs ran; the rest is the parse of the round's reads, after it), this bench client ${(cpu.client / withListeners.length).toFixed(2)} ms`);
  if (overran > 0) console.log(`the listeners' opening took longer than the ${PAUSE_MS} ms between rounds ${overran} times: those rounds started later (PAUSE_MS=... to change)`);
  console.log(`data directory: ${tmp.dir}${await noJournalNote(tmp.dir)}`);
  console.log(`load average while measured: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} on ${(await import('node:os')).cpus().length} cores; listeners' process niceness ${LISTENERS_NICE}${LISTENERS_SCHED === 'idle' ? ', SCHED_IDLE' : ''}${PIN ? (PIN_FANOUT ? '; pinned: server on CPU 0, fan-out, client and listeners on CPU 1' : '; pinned: server and fan-out on CPU 0, client and listeners on CPU 1') : PIN_FANOUT ? '; fan-out process on CPU 1, the rest unpinned' : ''}`);
  if (LISTENERS > 0) console.log(`fan-out lag (PUT answered -> last of ${LISTENERS} listeners has the event): p50 ${quantile(lags, 0.5).toFixed(1)} ms, p95 ${quantile(lags, 0.95).toFixed(1)} ms`);
  if (process.env.PROFILE) {
    // The fan-out process inherits the preload (NODE_OPTIONS): its profile is written too.
    process.kill(server.pid, 'SIGUSR2');
    if (fanOut !== undefined) process.kill(fanOut, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 2_000));
    console.log(`CPU profiles of the server${fanOut === undefined ? '' : ` and of its fan-out process (pid ${fanOut})`} written to ${PROFILES}`);
  }
  await server.kill('SIGTERM');
} finally {
  await killAllChildren();
  await tmp.cleanup();
}
