import { readdir, readFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { CHECK_MS, chrtSetClass, FanOutScheduling, NORMAL_MS, schedulingPolicyOf, STARVED_MS, type SchedulingClass } from '../../src/http/events/fanOutScheduling.js';

/** A clock and a timer the test moves by hand, and every class set and line logged. */
function fakeDeps(failing: SchedulingClass[] = []): {
  deps: ConstructorParameters<typeof FanOutScheduling>[0];
  set: SchedulingClass[];
  logs: string[];
  tick: (ms: number) => Promise<void>;
} {
  let now = 1_000;
  let fn: (() => void) | null = null;
  const set: SchedulingClass[] = [];
  const logs: string[] = [];
  return {
    set,
    logs,
    deps: {
      setClass: async (cls) => {
        if (failing.includes(cls)) throw new Error('chrt: not permitted');
        set.push(cls);
      },
      now: () => now,
      every: (ms, f) => {
        expect(ms).to.equal(CHECK_MS);
        fn = f;
      },
      log: (level, msg) => logs.push(`${level} ${msg}`),
    },
    // The timer fires once, `ms` after its last run (a starved process runs it late), then the switch settles.
    tick: async (ms) => {
      now += ms;
      fn?.();
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('HTTP events: the fan-out process in the idle class (fanOutScheduling)', () => {
  it('KNOWLEDGE_EVENT_FANOUT_PRIORITY is idle unless set to nice; any other value stops the start with a message', () => {
    expect(loadConfig({}).eventStreams.fanOutPriority).to.equal('idle');
    expect(loadConfig({ KNOWLEDGE_EVENT_FANOUT_PRIORITY: 'nice' }).eventStreams.fanOutPriority).to.equal('nice');
    expect(() => loadConfig({ KNOWLEDGE_EVENT_FANOUT_PRIORITY: 'low' })).to.throw(ConfigError, 'KNOWLEDGE_EVENT_FANOUT_PRIORITY must be idle or nice (got "low")');
  });

  it('KNOWLEDGE_EVENT_FANOUT is process unless set to server; any other value stops the start with a message', () => {
    expect(loadConfig({}).eventStreams.fanOut).to.equal('process');
    expect(loadConfig({ KNOWLEDGE_EVENT_FANOUT: 'server' }).eventStreams.fanOut).to.equal('server');
    expect(() => loadConfig({ KNOWLEDGE_EVENT_FANOUT: 'thread' })).to.throw(ConfigError, 'KNOWLEDGE_EVENT_FANOUT must be process or server (got "thread")');
  });

  it('goes to the idle class at start and stays there while its timer runs on time', async () => {
    const f = fakeDeps();
    const scheduling = new FanOutScheduling(f.deps);
    await scheduling.start();
    for (let i = 0; i < 100; i++) await f.tick(CHECK_MS + 20);
    expect(f.set).to.deep.equal(['idle']);
    expect(scheduling.schedulingClass).to.equal('idle');
    expect(f.logs).to.deep.equal([]);
  });

  it('once starved (its timer a second late), goes back to the normal class, and tries the idle class again after a while', async () => {
    const f = fakeDeps();
    const scheduling = new FanOutScheduling(f.deps);
    await scheduling.start();
    await f.tick(CHECK_MS + STARVED_MS - 1);
    expect(scheduling.schedulingClass, 'just under the bound').to.equal('idle');
    await f.tick(CHECK_MS + STARVED_MS);
    expect(scheduling.schedulingClass).to.equal('normal');
    expect(f.logs).to.have.length(1);
    expect(f.logs[0]).to.match(/^warn event fan-out process waited for a core/);
    // Late again while in the normal class: nothing more to do.
    await f.tick(CHECK_MS + 5 * STARVED_MS);
    for (let t = 0; t < NORMAL_MS - 6 * STARVED_MS; t += CHECK_MS) await f.tick(CHECK_MS);
    expect(scheduling.schedulingClass, 'before NORMAL_MS has passed').to.equal('normal');
    for (let t = 0; t < 2 * STARVED_MS; t += CHECK_MS) await f.tick(CHECK_MS);
    expect(scheduling.schedulingClass).to.equal('idle');
    expect(f.set).to.deep.equal(['idle', 'normal', 'idle']);
  });

  it('keeps its class, and starts no watchdog, when the idle class cannot be had', async () => {
    const f = fakeDeps(['idle']);
    const scheduling = new FanOutScheduling(f.deps);
    await scheduling.start();
    await f.tick(CHECK_MS + 10 * STARVED_MS);
    expect(f.set).to.deep.equal([]);
    expect(scheduling.schedulingClass).to.equal('normal');
    expect(f.logs).to.deep.equal(['info event fan-out process keeps its scheduling class (could not set idle)']);
  });

  it('a starved process that cannot go back to the normal class stays idle and says so', async () => {
    const f = fakeDeps(['normal']);
    const scheduling = new FanOutScheduling(f.deps);
    await scheduling.start();
    await f.tick(CHECK_MS + STARVED_MS);
    expect(scheduling.schedulingClass).to.equal('idle');
    expect(f.logs.at(-1)).to.equal('info event fan-out process keeps its scheduling class (could not set normal)');
  });

  it('back in the normal class and refused the idle class, tries again only after the same while', async () => {
    const failing: SchedulingClass[] = [];
    const f = fakeDeps(failing);
    const scheduling = new FanOutScheduling(f.deps);
    await scheduling.start();
    await f.tick(CHECK_MS + STARVED_MS);
    expect(scheduling.schedulingClass).to.equal('normal');
    failing.push('idle');
    for (let t = 0; t <= 3 * NORMAL_MS; t += CHECK_MS) await f.tick(CHECK_MS);
    // One refused try per NORMAL_MS, not one per check.
    expect(f.logs.filter((line) => line.includes('could not set idle'))).to.have.length(3);
    failing.length = 0;
    for (let t = 0; t <= NORMAL_MS; t += CHECK_MS) await f.tick(CHECK_MS);
    expect(scheduling.schedulingClass).to.equal('idle');
  });

  // The real call, on a real process: what /proc says of it after chrt (util-linux; CI installs it with the base system).
  it('chrt sets every thread of a process to SCHED_IDLE and back', async () => {
    const child = spawn(process.execPath, ['-e', "process.stdout.write('up'); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      // Started, its threads with it (V8's platform threads start before any script runs).
      await new Promise((resolve) => child.stdout.once('data', resolve));
      const pid = child.pid as number;
      const read = (path: string): Promise<string> => readFile(path, 'utf8');
      expect(await schedulingPolicyOf(pid, read)).to.equal('normal');
      await chrtSetClass(pid)('idle');
      expect(await schedulingPolicyOf(pid, read)).to.equal('idle');
      const threads = await readdir(`/proc/${pid}/task`);
      expect(threads.length, 'node runs several threads').to.be.greaterThan(1);
      for (const tid of threads) expect(await schedulingPolicyOf(Number(tid), read), `thread ${tid}`).to.equal('idle');
      await chrtSetClass(pid)('normal');
      expect(await schedulingPolicyOf(pid, read)).to.equal('normal');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
