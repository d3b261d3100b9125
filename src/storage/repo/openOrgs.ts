import type { Logger } from '../../common/log.js';
import type { Metrics } from '../../common/metrics.js';

/**
 * How many organizations `openEach` opens at a time. Each opening waits mostly on C git (`count-objects`) and
 * the disk: with 200 small organizations, 32 at a time were ready about as soon as all at once (2.5–2.9 s against
 * 2.2–2.7 s, test/bench/orgMemory.ts --ready) with ~45 MiB less RSS once ready; 8 at a time took longer.
 */
export const OPEN_AT_ONCE = 32;

/** An organization's repository, held open for one user until `release` (which may be called more than once). */
export interface OrgLease<R> {
  readonly repo: R;
  release(): void;
}

/** What OpenOrgs needs of a repository. */
export interface OpenRepo {
  /** Nothing under way that a close would wait for or cut short (see OrgRepo.idle). */
  readonly idle: boolean;
  readonly queuedWrites: number;
  close(): Promise<void>;
}

/**
 * The repositories a process has open: each opened on first use and shared by its users. With `maxOpen`, once
 * more than that many are open the least recently used are closed, but only those that:
 * - nobody holds: a request holds its organization from its key's check to its answer's end, an event stream for
 *   its life (`hold`);
 * - have nothing under way: a write, a repack, a search build (`idle`);
 * - are not kept open: an organization with mirrors, or one with webhooks while it has any, has workers that hold
 *   its repository (`keep`, counted: each keep is let go on its own).
 * The limit gives way rather than wait: while every open one is held, busy or kept, more stay open, and the
 * next release or open closes what has become closable. A repository being closed is opened again for its next
 * user only once its close has finished: its files (the search index, the ref lock) have one writer at a time.
 */
export class OpenOrgs<R extends OpenRepo> {
  /** Every organization opened or being opened. */
  private readonly slots = new Map<string, Slot<R>>();
  /** How many slots have their repository (GET /metrics' open organizations). */
  private openCount = 0;
  /** A use counter: each hold stamps its slot with the next value, so the smallest is the least recently used. */
  private uses = 0;
  /** How many keeps each kept organization has (its mirrors, its webhooks): closed for being idle only at none. */
  private readonly kept = new Map<string, number>();
  /** Organizations opened at least once by this process (`openEach` does not open them again). */
  private readonly openedOnce = new Set<string>();
  private readonly closing = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: {
      openRepo: (orgId: string) => Promise<R | null>;
      /** At most this many open while some can be closed (0: no limit, nothing is closed before `closeAll`). */
      maxOpen: number;
      logger: Logger;
      metrics: Metrics;
    },
  ) {}

  /** The organization's repository, or null when there is no such organization. Not held: see `hold`. */
  get(orgId: string): Promise<R | null> {
    return this.slotOf(orgId).opening;
  }

  /**
   * The organization's repository, held open until the lease is released; null (nothing held) when there is
   * no such organization. Held from before its opening, so it cannot be closed under the holder. On every
   * request: an open one is handed over with no map changed and no promise but the one returned.
   */
  hold(orgId: string): Promise<OrgLease<R> | null> {
    const slot = this.slotOf(orgId);
    slot.holds++;
    slot.lastUse = ++this.uses;
    if (slot.repo) return Promise.resolve(new Lease(slot.repo, () => this.released(slot)));
    return slot.opening.then(
      (repo) => {
        if (repo) return new Lease(repo, () => this.released(slot));
        this.released(slot);
        return null;
      },
      (err: unknown) => {
        this.released(slot);
        throw err;
      },
    );
  }

  /**
   * Opens each of `ids` that this process has not opened before, a few at a time (memory and the disk are not
   * asked for all at once); says which could not be. One opened before counts as opened: readiness, which asks
   * every second, never reopens what the limit closed.
   */
  async openEach(ids: readonly string[]): Promise<{ opened: number; failed: string[] }> {
    const opened = ids.map((id) => this.openedOnce.has(id));
    let next = 0;
    const opener = async (): Promise<void> => {
      for (let i = next++; i < ids.length; i = next++) {
        if (!opened[i]) opened[i] = await this.get(ids[i] as string).then((repo) => repo !== null, () => false);
      }
    };
    await Promise.all(Array.from({ length: Math.min(OPEN_AT_ONCE, ids.length) }, opener));
    return { opened: opened.filter(Boolean).length, failed: ids.filter((_id, i) => !opened[i]) };
  }

  /**
   * Never closes the organization for being idle until the keep is let go (its webhooks' or mirrors' workers
   * hold its repository): the function returned lets go of this keep, once; others of the same organization
   * (mirrors and webhooks both, say) still hold.
   */
  keep(orgId: string): () => void {
    this.kept.set(orgId, (this.kept.get(orgId) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.kept.get(orgId) ?? 1) - 1;
      if (left > 0) this.kept.set(orgId, left);
      else this.kept.delete(orgId);
      // Closable now perhaps, if over the limit and nobody holds it (else at its release).
      this.shedOver();
    };
  }

  /** Open now, and the writes queued across them. */
  stats(): { openOrganizations: number; queuedWrites: number } {
    let queuedWrites = 0;
    for (const { repo } of this.slots.values()) queuedWrites += repo?.queuedWrites ?? 0;
    return { openOrganizations: this.openCount, queuedWrites };
  }

  /** Closes every repository, those being closed for being idle included. */
  async closeAll(): Promise<void> {
    const openings = [...this.slots.values()].map((slot) => slot.opening.catch(() => null));
    this.slots.clear();
    this.openCount = 0;
    const repos = await Promise.all(openings);
    await Promise.all([...repos.map((r) => r?.close()), ...this.closing.values()]);
  }

  private slotOf(orgId: string): Slot<R> {
    const found = this.slots.get(orgId);
    if (found) return found;
    // A repository still closing is opened again once it has closed.
    const closing = this.closing.get(orgId);
    const opening = closing ? closing.then(() => this.deps.openRepo(orgId)) : this.deps.openRepo(orgId);
    const slot: Slot<R> = { opening, repo: null, holds: 0, lastUse: ++this.uses };
    this.slots.set(orgId, slot);
    opening.then(
      (repo) => {
        if (this.slots.get(orgId) !== slot) return; // closeAll came first
        if (!repo) return void this.slots.delete(orgId);
        slot.repo = repo;
        this.openCount++;
        this.openedOnce.add(orgId);
        this.shed();
      },
      // A failed or missing open is not kept: the organization may be created or repaired later.
      () => {
        if (this.slots.get(orgId) === slot) this.slots.delete(orgId);
      },
    );
    return slot;
  }

  private released(slot: Slot<R>): void {
    slot.holds--;
    this.shedOver();
  }

  private shedOver(): void {
    if (this.deps.maxOpen > 0 && this.openCount > this.deps.maxOpen) this.shed();
  }

  /** Closes the least recently used closable repositories while more than `maxOpen` are open. */
  private shed(): void {
    const { maxOpen } = this.deps;
    while (maxOpen > 0 && this.openCount > maxOpen) {
      let oldest: { orgId: string; repo: R; lastUse: number } | null = null;
      for (const [orgId, slot] of this.slots) {
        const { repo } = slot;
        if (!repo || slot.holds > 0 || (oldest && oldest.lastUse < slot.lastUse)) continue;
        if (this.kept.has(orgId) || !repo.idle) continue;
        oldest = { orgId, repo, lastUse: slot.lastUse };
      }
      if (!oldest) return; // every open one is held, busy or kept: the limit gives way
      this.closeIdle(oldest.orgId, oldest.repo);
    }
  }

  private closeIdle(orgId: string, repo: R): void {
    const { logger, metrics } = this.deps;
    // Gone from the slots in this same step: the next user opens it again, after this close.
    this.slots.delete(orgId);
    this.openCount--;
    metrics.orgClosed();
    const closed = repo.close().then(
      () => logger.debug('organization closed (idle, too many open)', { org: orgId }),
      (err: unknown) => logger.error('could not close an idle organization cleanly; it is opened again on its next use', { org: orgId, error: String(err) }),
    );
    const closing = closed.finally(() => {
      if (this.closing.get(orgId) === closing) this.closing.delete(orgId);
    });
    this.closing.set(orgId, closing);
  }
}

/** One organization opened or being opened, and who holds it. */
interface Slot<R> {
  readonly opening: Promise<R | null>;
  /** Once opened. */
  repo: R | null;
  holds: number;
  lastUse: number;
}

class Lease<R> implements OrgLease<R> {
  private held = true;

  constructor(
    readonly repo: R,
    private readonly onRelease: () => void,
  ) {}

  release(): void {
    if (!this.held) return;
    this.held = false;
    this.onRelease();
  }
}
