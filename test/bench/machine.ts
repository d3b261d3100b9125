import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ext4WithoutJournal } from '../../src/storage/fs/ext4Journal.js';

/**
 * The machine the figures come from, and how its CPUs are shared (the
 * rule: pin or share them the same way for every contender, and say how). Every
 * contender that does the work being measured (our server, the bare Koa app,
 * the git and isomorphic-git commit loops) runs on the server CPU; the load
 * generator (autocannon, in this process) and the bench itself on the other.
 */
export interface Pinning {
  /** True when `taskset` could pin processes; otherwise everything runs unpinned, sharing all CPUs. */
  pinned: boolean;
  serverCpu: string | null;
  loadCpu: string | null;
  description: string;
}

const run = (cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> =>
  new Promise((resolve) => {
    execFile(cmd, args, { timeout: 10_000 }, (err, stdout, stderr) => resolve({ ok: !err, out: `${stdout}${stderr}`.trim() }));
  });

/** Pins this process (the load generator) to the last CPU, and chooses CPU 0 for the contenders. */
/** No pinning: every process where the scheduler puts it (a bench that measures memory or one query at a time). */
export const UNPINNED: Pinning = { pinned: false, serverCpu: null, loadCpu: null, description: 'unpinned' };

export async function setupPinning(): Promise<Pinning> {
  const cpus = os.cpus().length;
  const probe = await run('taskset', ['-p', String(process.pid)]);
  if (!probe.ok) {
    return { pinned: false, serverCpu: null, loadCpu: null, description: `unpinned: taskset is not available (${probe.out.slice(0, 80) || 'not found'}); all contenders and the load generator share ${cpus} CPU(s)` };
  }
  if (cpus < 2) {
    return { pinned: false, serverCpu: null, loadCpu: null, description: `unpinned: only ${cpus} CPU; contenders and the load generator share it` };
  }
  const loadCpu = String(cpus - 1);
  const pin = await run('taskset', ['-pc', loadCpu, String(process.pid)]);
  if (!pin.ok) {
    return { pinned: false, serverCpu: null, loadCpu: null, description: `unpinned: taskset -pc failed (${pin.out.slice(0, 80)}); all share ${cpus} CPUs` };
  }
  return {
    pinned: true,
    serverCpu: '0',
    loadCpu,
    description:
      `taskset: every contender (our server, bare Koa, the git plumbing loop with its git processes, the isomorphic-git loop) on CPU 0; ` +
      `the load generator (autocannon and the timed HTTP clients, in the bench process) on CPU ${loadCpu}` +
      (cpus > 2 ? `; CPUs 1-${cpus - 2} unused` : ''),
  };
}

/** The command line that runs `cmd args` on the contenders' CPU (children inherit it). */
export function onServerCpu(pinning: Pinning, cmd: string, args: string[]): { cmd: string; args: string[] } {
  return pinning.pinned ? { cmd: 'taskset', args: ['-c', pinning.serverCpu as string, cmd, ...args] } : { cmd, args };
}

export interface MachineInfo {
  cpuModel: string;
  cpus: number;
  memoryGiB: number;
  node: string;
  git: string;
  kernel: string;
  dataDirFs: string;
  pinning: string;
  /** 1-minute load average at the start and the end of the run: other work on the machine shows here. */
  loadAverage: string;
}

export async function describeMachine(args: { dataDir: string; pinning: Pinning }): Promise<MachineInfo> {
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const gitVersion = (await run('git', ['--version'])).out;
  const df = await run('df', ['-T', args.dataDir]);
  const fsLine = df.out.split('\n')[1]?.split(/\s+/);
  return {
    cpuModel: model,
    // Not availableParallelism(): that is this process's affinity, one CPU once it is pinned.
    cpus: os.cpus().length,
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    git: gitVersion.replace(/^git version /, ''),
    kernel: `${os.type()} ${os.release()}`,
    dataDirFs: `${fsLine ? `${fsLine[1]} on ${fsLine[0]}` : 'unknown'}${await noJournalNote(args.dataDir)} (${args.dataDir})`,
    pinning: args.pinning.description,
    loadAverage: `${await loadAverage()} at start`,
  };
}

/**
 * `, without a journal` when the directory is on ext4 mounted so: file creation there slows with the inodes freed
 * in the last seconds to minutes, which moves every figure that writes (README, "The file system under the data directory").
 */
export async function noJournalNote(dir: string): Promise<string> {
  return (await ext4WithoutJournal(dir)) ? ', without a journal' : '';
}

/** The environment of a server whose SIGUSR2 runs a full garbage collection (gcOnSignal.cjs; its children inherit it). */
export const GC_ON_SIGNAL = {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc --require "${fileURLToPath(new URL('./gcOnSignal.cjs', import.meta.url))}"`.trim(),
};

/** VmRSS and VmHWM of a process, in MiB (Linux). */
export async function memoryOf(pid: number): Promise<{ rssMiB: number; hwmMiB: number } | null> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => null);
  if (!status) return null;
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
}

let clockTicks: number | undefined;

/**
 * CPU seconds (user + system) a process has used so far, and its finished children (the git processes
 * our server runs), from /proc/<pid>/stat; NaN when unreadable.
 */
export async function cpuSecondsOf(pid: number): Promise<{ self: number; children: number; system: number }> {
  clockTicks ??= Number((await run('getconf', ['CLK_TCK'])).out) || 100;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (!stat) return { self: NaN, children: NaN, system: NaN };
  // Fields after the command name (which may hold spaces, inside parentheses): utime, stime, cutime, cstime are the 12th to 15th.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  // `system`: the process's own kernel time (part of `self`): file writes, fsyncs, the network.
  return { self: ((f[11] ?? NaN) + (f[12] ?? NaN)) / clockTicks, children: ((f[13] ?? NaN) + (f[14] ?? NaN)) / clockTicks, system: (f[12] ?? NaN) / clockTicks };
}

/** The git runner process a server started (it starts the server's gits), or null when it has none (an older build). */
export async function gitRunnerOf(serverPid: number): Promise<number | null> {
  const out = (await run('pgrep', ['-P', String(serverPid), '-f', 'gitRunnerChild'])).out;
  const pid = Number(out.trim().split('\n')[0]);
  return pid > 0 ? pid : null;
}

/**
 * CPU seconds a server spent beside its own process on git: its reaped children (gits it started itself), and its
 * git runner with the gits that runner reaped. Other children (the event fan-out process) are not counted until
 * they end, as before.
 */
export async function gitCpuSecondsOf(serverPid: number, runnerPid: number | null): Promise<number> {
  const server = await cpuSecondsOf(serverPid);
  if (runnerPid === null) return server.children;
  const runner = await cpuSecondsOf(runnerPid);
  return server.children + runner.self + runner.children;
}

/** CPU seconds the whole machine spent busy so far (all CPUs, everything but idle and iowait), from /proc/stat. */
export async function machineBusySeconds(): Promise<number> {
  clockTicks ??= Number((await run('getconf', ['CLK_TCK'])).out) || 100;
  const stat = await readFile('/proc/stat', 'utf8').catch(() => null);
  const cpu = stat ? /^cpu\s+(.+)$/m.exec(stat)?.[1] : undefined;
  if (!cpu) return NaN;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = cpu.split(/\s+/).map(Number) as number[];
  void idle;
  void iowait;
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / clockTicks;
}

/** The 1-minute load average. */
export async function loadAverage(): Promise<number> {
  return Number((await readFile('/proc/loadavg', 'utf8').catch(() => 'NaN')).split(' ')[0]);
}

/**
 * CPU used by processes outside this process's tree (other users of the machine: a build, a test run),
 * leaving out kernel threads, whose disk and network work our own runs cause. Own CPU only (utime +
 * stime): a parent's children time jumps by a child's whole life when it is reaped, so it would count
 * work done before the measurement.
 */
async function foreignCpu(): Promise<Map<string, number>> {
  clockTicks ??= Number((await run('getconf', ['CLK_TCK'])).out) || 100;
  const procs = new Map<number, { ppid: number; start: string; cpu: number }>();
  const names = await readdir('/proc').catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((n) => /^\d+$/.test(n))
      .map(async (n) => {
        const stat = await readFile(`/proc/${n}/stat`, 'utf8').catch(() => null);
        if (!stat) return;
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        procs.set(Number(n), { ppid: Number(f[1]), start: f[19] ?? '', cpu: (Number(f[11]) + Number(f[12])) / (clockTicks as number) });
      }),
  );
  const ours = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = procs.get(p)?.ppid ?? 0, hops++) if (p === process.pid) return true;
    return false;
  };
  const out = new Map<string, number>();
  for (const [pid, { ppid, start, cpu }] of procs) {
    if (pid === 2 || ppid === 2 || ours(pid)) continue;
    out.set(`${pid}@${start}`, cpu); // with the start time: a reused pid is another process
  }
  return out;
}

/**
 * Starts measuring other processes' CPU, sampling every half second (a process that lives between two
 * samples is missed); the returned function stops and gives it, % of one CPU, since the start.
 */
export async function neighbourMeter(): Promise<() => Promise<number>> {
  const first = await foreignCpu();
  const last = new Map(first);
  const t = performance.now();
  let sampling: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    sampling = sampling.then(async () => {
      for (const [key, cpu] of await foreignCpu()) last.set(key, cpu);
    });
  }, 500);
  return async () => {
    clearInterval(timer);
    await sampling;
    for (const [key, cpu] of await foreignCpu()) last.set(key, cpu);
    let seconds = 0;
    for (const [key, cpu] of last) seconds += cpu - (first.get(key) ?? 0);
    return Math.max(0, (100 * seconds) / ((performance.now() - t) / 1000));
  };
}

/**
 * CPU time (ms) of a process's main thread and of its other threads together (V8's GC helpers, libuv's pool), from
 * /proc/<pid>/task: what the listeners cost the server was once mostly garbage collection on the other threads.
 */
export function threadsMs(pid: number): { main: number; others: number } {
  const out = { main: 0, others: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = (Number(fields[11]) + Number(fields[12])) * 10;
      if (Number(tid) === pid) out.main += ms;
      else out.others += ms;
    } catch {
      // a thread gone meanwhile
    }
  }
  return out;
}
