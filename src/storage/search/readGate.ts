/**
 * Holds queries back while the index has a transaction open across an await
 * (a batch staged while its ref update is fsynced, not yet published): SQLite shows
 * a connection its own uncommitted rows, and the index has one connection (its
 * file is opened with exclusive locking), so a query run then would see items
 * whose commit may never be published.
 */
export class ReadGate {
  private held: { done: Promise<void>; release: () => void } | null = null;

  get closed(): boolean {
    return this.held !== null;
  }

  close(): void {
    if (this.held) throw new Error('search index: a staged transaction is already open');
    let release: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (release = resolve));
    this.held = { done, release };
  }

  /** Lets the waiting queries run: they were queued first, so they run before anything else can close the gate again. */
  open(): void {
    const held = this.held;
    this.held = null;
    held?.release();
  }

  /** Resolves once no staged transaction is open. */
  async idle(): Promise<void> {
    while (this.held) await this.held.done;
  }
}
