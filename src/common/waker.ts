/**
 * A flag with a promise, for a loop that sleeps until something happens: `ring` wakes the waiter, or the
 * next `wait` when nobody waits yet, so a ring between a loop's look and its sleep is never lost.
 */
export class Waker {
  private rung = false;
  private waiting: (() => void) | null = null;

  ring(): void {
    this.rung = true;
    this.waiting?.();
    this.waiting = null;
  }

  /** Forgets earlier rings: call before looking, so that only what comes after wakes the next wait. */
  clear(): void {
    this.rung = false;
  }

  /** Resolves at the next ring (at once if rung since `clear`), or after `ms` when given. */
  wait(ms?: number): Promise<void> {
    if (this.rung) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => {
        if (this.waiting === done) this.waiting = null;
        resolve();
      }, ms);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.waiting = done;
    });
  }
}
