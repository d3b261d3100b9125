/** How often a stream looks again at its key (the key store notices a revocation within a second too). */
export const KEY_CHECK_MS = 1000;

/**
 * A key's validity, asked again at most once per KEY_CHECK_MS: a revocation ends a stream at the first
 * commit or heartbeat a second after it, without a key-store look-up per wake-up of every stream.
 * It starts valid: the key was checked when the stream was opened.
 */
export class KeyCheck {
  private checkedAt: number;
  private last: Promise<boolean> = Promise.resolve(true);
  /** The answer of the last check once it came (undefined while one is on its way). */
  private answer: boolean | undefined = true;

  constructor(
    private readonly check: () => Promise<boolean>,
    private readonly now: () => number = Date.now,
  ) {
    this.checkedAt = now();
  }

  valid(): Promise<boolean> {
    if (this.fresh()) return this.last;
    this.checkedAt = this.now();
    const asked = this.check();
    this.last = asked;
    this.answer = undefined;
    asked.then(
      (valid) => {
        if (this.last === asked) this.answer = valid;
      },
      // A failed check is the stream's to see (valid() rejects): never taken as valid here.
      () => undefined,
    );
    return asked;
  }

  /**
   * True when valid() would answer true without asking: the last check said valid less than KEY_CHECK_MS
   * ago. A stream woken with others takes their turn without its own loop only then (see wakeParked).
   */
  knownValid(): boolean {
    return this.answer === true && this.fresh();
  }

  private fresh(): boolean {
    return this.now() - this.checkedAt < KEY_CHECK_MS;
  }
}
