/**
 * A budget of `size` units shared by tasks: each holds `weight` units (1 unless told) while it runs; the
 * others wait, in arrival order (the first waiter is served before any later one, so a heavy task is never
 * starved by light ones behind it). A task heavier than the whole budget is clamped to it and runs alone.
 * Used for uploads held in memory (http/routes/files.ts: a burst of large uploads costs at most `size`
 * bodies, the rest held back by TCP before a byte is read), for downloads (weighted by their bytes, held
 * until the answer is sent) and for text extractions (extract/extractorPool.ts: one worker per core).
 */
export class Slots {
  private free: number;
  private readonly waiting: Array<{ weight: number; start: () => void }> = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Units held now. */
  get held(): number {
    return this.size - this.free;
  }

  /**
   * Waits for `weight` units (in arrival order) and holds them until the returned release is called
   * (once; later calls do nothing), for tasks whose end is not a promise of ours (an answer being sent).
   */
  async acquire(weight = 1): Promise<() => void> {
    const units = Math.min(Math.max(weight, 0), this.size);
    if (this.waiting.length === 0 && this.free >= units) this.free -= units;
    else await new Promise<void>((start) => this.waiting.push({ weight: units, start }));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.free += units;
      this.startWaiters();
    };
  }

  /** Runs `fn` holding `weight` units (waiting for them first, in arrival order); they are freed however `fn` ends. */
  async run<T>(fn: () => Promise<T>, weight = 1): Promise<T> {
    const release = await this.acquire(weight);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private startWaiters(): void {
    for (let next = this.waiting[0]; next && this.free >= next.weight; next = this.waiting[0]) {
      this.waiting.shift();
      this.free -= next.weight;
      next.start();
    }
  }
}
