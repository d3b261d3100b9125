/** How often a stream looks again at its key (the key store notices a revocation within a second too). */
export const KEY_CHECK_MS = 1000;

/**
 * A key's validity, asked again at most once per KEY_CHECK_MS: a revocation ends a stream at the first
 * commit or heartbeat a second after it, without a key-store look-up per wake-up of every stream.
 * It starts valid: the key was checked when the stream was opened.
 */
export class KeyCheck {
  private checkedAt = Date.now();
  private last: Promise<boolean> = Promise.resolve(true);

  constructor(private readonly check: () => Promise<boolean>) {}

  valid(): Promise<boolean> {
    if (Date.now() - this.checkedAt < KEY_CHECK_MS) return this.last;
    this.checkedAt = Date.now();
    this.last = this.check();
    return this.last;
  }
}
