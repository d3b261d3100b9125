/**
 * One string (or object) for each value a large load repeats, so that 50,000 parsed records or commits
 * do not each hold their own copy of the same author, key id or action (issue 17: the history log and
 * the index snapshot). Used for one load and dropped: what it shares stays shared, the table goes.
 */
export class SharedStrings {
  private readonly strings = new Map<string, string>();
  private readonly objects = new Map<string, object>();

  string<T extends string>(s: T): T {
    const known = this.strings.get(s);
    if (known !== undefined) return known as T;
    this.strings.set(s, s);
    return s;
  }

  /** The object first made for `key` (by `make`), for every later caller with the same key. */
  object<T extends object>(key: string, make: () => T): T {
    let known = this.objects.get(key) as T | undefined;
    if (!known) this.objects.set(key, (known = make()));
    return known;
  }
}
