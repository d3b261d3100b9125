/**
 * A one-time signal (a client gone) that a long-lived loop races each of its waits against.
 *
 * Not Promise.race([work, signal]): every such race adds a reaction to the signal's promise, and that reaction
 * (holding the race's promise, so the work's result) stays until the signal fires. A loop that races every turn
 * against one signal keeps every turn it ever had: an event stream kept each turn's bytes for as long as it
 * lived (two races per wake-up, about 300 bytes each plus the turn). A race here takes its waiter back as
 * soon as it has settled.
 */
export class Interrupt {
  private done = false;
  private readonly waiting = new Set<() => void>();

  get fired(): boolean {
    return this.done;
  }

  /** Settles every race now (with null), and every later one at once. */
  fire(): void {
    if (this.done) return;
    this.done = true;
    for (const stop of this.waiting) stop();
    this.waiting.clear();
  }

  /** `work`'s result, or null as soon as the signal fires (a late result, or failure, is then dropped). */
  race<T>(work: Promise<T>): Promise<T | null> {
    if (this.done) return Promise.resolve(null);
    return new Promise<T | null>((resolve, reject) => {
      const stop = (): void => resolve(null);
      this.waiting.add(stop);
      work.then(
        (value) => {
          this.waiting.delete(stop);
          resolve(value);
        },
        (err: unknown) => {
          this.waiting.delete(stop);
          reject(err);
        },
      );
    });
  }
}
