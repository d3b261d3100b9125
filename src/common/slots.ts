/**
 * At most `size` tasks at once; the others wait for a slot, in arrival order (a slot freed is handed to
 * the next waiter directly). Used for uploads held in memory (http/routes/files.ts: a burst of large
 * uploads costs at most `size` bodies, the rest held back by TCP before a byte is read) and for text
 * extractions (extract/extractorPool.ts: one worker per core).
 */
export class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `fn` holding a slot (waiting for one first, in arrival order); the slot is freed however `fn` ends. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}
