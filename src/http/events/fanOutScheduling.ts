import { execFile } from 'node:child_process';

/**
 * The event fan-out process runs in Linux's SCHED_IDLE class while it keeps up, so that the writers' requests take
 * a core from it at once.
 *
 * Why not niceness alone: the fan-out process already ran at the server's niceness +10, yet on 2 cores the PUTs
 * that arrived while a wake-up's 200 socket writes ran waited for them (test/bench/events.ts: PUT p95 +19-22% with
 * 200 listeners, the median within 5%). A woken task of the normal class preempts a SCHED_IDLE one at once
 * (the scheduler's wake-up check), where a niced one may keep the core for the rest of its slice. Measured in the
 * same bench it leans better (median added p95 +4% over six runs against +11% over five at niceness +10), though the
 * runs overlap and the bench's own spread at p95 (no listener on either side) is about as large (README, Events,
 * Figures): kept for the mechanism, and because nothing measured it worse.
 *
 * Why a watchdog: a SCHED_IDLE task gets almost no CPU while every core is busy with others (weight 3 against
 * 1,024), so a server whose cores are all busy would send no event and no heartbeat for as long as that lasts. A
 * timer of this process measures how late it runs; once it is STARVED_MS late the process goes back to the
 * normal class (at its niceness, +10) for NORMAL_MS, then tries the idle class again. Node has no call for
 * sched_setscheduler: `chrt` (util-linux) sets it, on every thread of the process (`-a`); threads started later
 * (libuv's pool) inherit it. Without chrt, or off Linux, the process keeps its niceness, as before.
 */

/** How often the watchdog looks at the time. */
export const CHECK_MS = 250;
/** A timer this late means the process waited that long for a core: back to the normal class. */
export const STARVED_MS = 1_000;
/** How long it stays in the normal class once starved, before it tries the idle class again. */
export const NORMAL_MS = 30_000;

export type SchedulingClass = 'idle' | 'normal';

export interface SchedulingDeps {
  /** Puts every thread of this process in that class; rejects when it cannot. */
  setClass(cls: SchedulingClass): Promise<void>;
  now(): number;
  /** Calls `fn` every `ms` for the life of the process (the fan-out process never stops it: it exits instead). */
  every(ms: number, fn: () => void): void;
  log(level: 'warn' | 'info', msg: string, fields: Record<string, unknown>): void;
}

export class FanOutScheduling {
  private current: SchedulingClass = 'normal';
  private since = 0;
  private last = 0;
  private changing = false;

  constructor(private readonly deps: SchedulingDeps) {}

  /** Tries the idle class; when that cannot be had, nothing more is done (no watchdog). */
  async start(): Promise<void> {
    if (!(await this.switchTo('idle'))) return;
    this.last = this.deps.now();
    this.deps.every(CHECK_MS, () => this.check());
  }

  get schedulingClass(): SchedulingClass {
    return this.current;
  }

  private check(): void {
    const now = this.deps.now();
    const late = now - this.last - CHECK_MS;
    this.last = now;
    if (this.changing) return;
    if (this.current === 'idle' && late >= STARVED_MS) {
      this.deps.log('warn', 'event fan-out process waited for a core at idle priority; back to the normal class (niceness +10) for a while', { lateMs: Math.round(late), normalForMs: NORMAL_MS });
      void this.switchTo('normal');
    } else if (this.current === 'normal' && now - this.since >= NORMAL_MS) {
      void this.switchTo('idle');
    }
  }

  private async switchTo(cls: SchedulingClass): Promise<boolean> {
    this.changing = true;
    try {
      await this.deps.setClass(cls);
      this.current = cls;
      return true;
    } catch (err) {
      this.deps.log('info', `event fan-out process keeps its scheduling class (could not set ${cls})`, { error: String(err) });
      return false;
    } finally {
      this.changing = false;
      // The time spent switching (chrt starts, at idle priority) is not lateness; a try that failed is not made
      // again before NORMAL_MS either (one chrt and one log line per check otherwise).
      this.last = this.since = this.deps.now();
    }
  }
}

/** `chrt -a --idle|--other -p 0 <pid>`: the class of every thread of process `pid` (util-linux). */
export function chrtSetClass(pid: number): (cls: SchedulingClass) => Promise<void> {
  return (cls) =>
    new Promise((resolve, reject) => {
      execFile('chrt', ['-a', cls === 'idle' ? '--idle' : '--other', '-p', '0', String(pid)], { timeout: 5_000 }, (err, _stdout, stderr) => {
        if (err) reject(new Error(`chrt: ${stderr.trim() || err.message}`));
        else resolve();
      });
    });
}

/** The scheduling class of process `pid` as /proc says it (its main thread), for tests and logs; null off Linux. */
export async function schedulingPolicyOf(pid: number, read: (path: string) => Promise<string>): Promise<SchedulingClass | 'other' | null> {
  try {
    const stat = await read(`/proc/${pid}/stat`);
    // Field 41 (policy), counted after the command's closing parenthesis (field 2 may hold spaces).
    const policy = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
    return policy === 5 ? 'idle' : policy === 0 ? 'normal' : 'other';
  } catch {
    return null;
  }
}
