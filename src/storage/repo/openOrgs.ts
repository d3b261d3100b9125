import type { Logger } from '../../common/log.js';
import type { Metrics } from '../../common/metrics.js';

/** How many organizations `openEach` opens at a time. */
const OPEN_AT_ONCE = 8;

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
 * - are not kept open for good: an organization with webhooks or mirrors has workers that hold its repository
 *   (`keep`, `keepOpen`).
 * The limit gives way rather than wait: while every open one is held, busy or kept, more stay open, and the
 * next release or open closes what has become closable. A repository being closed is opened again for its next
 * user only once its close has finished: its files (the search index, the ref lock) have one writer at a time.
 */
export class OpenOrgs<R extends OpenRepo> {
  private readonly open = new Map<string, Promise<R | null>>();
  /** The repositories whose opening finished, least recently used first (`hold` moves its own to the end). */
  private readonly opened = new Map<string, R>();
  /** How many leases each organization has out; counted from before its opening, so it cannot close under them. */
  private readonly holds = new Map<string, number>();
  private readonly kept = new Set<string>();
  private readonly closing = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: {
      openRepo: (orgId: string) => Promise<R | null>;
      /** At most this many open while some can be closed (0: no limit, nothing is closed before `closeAll`). */
      maxOpen: number;
      /** Organizations never closed for being idle (the server's: those with mirrors). */
      keepOpen?: (orgId: string) => boolean;
      logger: Logger;
      metrics: Metrics;
    },
  ) {}

  /** The organization's repository, or null when there is no such organization. Not held: see `hold`. */
  get(orgId: string): Promise<R | null> {
    let pending = this.open.get(orgId);
    if (!pending) {
      // A repository still closing is opened again once it has closed.
      const closing = this.closing.get(orgId);
      pending = closing ? closing.then(() => this.deps.openRepo(orgId)) : this.deps.openRepo(orgId);
      this.open.set(orgId, pending);
      const opening = pending;
      // A failed or missing open is not cached: the organization may be created or repaired later.
      opening.then(
        (repo) => {
          if (!repo) return this.forget(orgId, opening);
          this.opened.set(orgId, repo);
          this.shed();
        },
        () => this.forget(orgId, opening),
      );
    }
    return pending;
  }

  /**
   * The organization's repository, held open until the lease is released; null (nothing held) when there is
   * no such organization.
   */
  async hold(orgId: string): Promise<OrgLease<R> | null> {
    this.holds.set(orgId, (this.holds.get(orgId) ?? 0) + 1);
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      const left = (this.holds.get(orgId) ?? 1) - 1;
      if (left > 0) this.holds.set(orgId, left);
      else this.holds.delete(orgId);
      this.shed();
    };
    let repo: R | null;
    try {
      repo = await this.get(orgId);
    } catch (err) {
      release();
      throw err;
    }
    if (!repo) {
      release();
      return null;
    }
    // The most recently used goes last, where closing looks last.
    if (this.opened.get(orgId) === repo) {
      this.opened.delete(orgId);
      this.opened.set(orgId, repo);
    }
    return { repo, release };
  }

  /** Opens each of `ids`, a few at a time (memory and the disk are not asked for all at once); says which could not be. */
  async openEach(ids: readonly string[]): Promise<{ opened: number; failed: string[] }> {
    const opened = new Array<boolean>(ids.length).fill(false);
    let next = 0;
    const opener = async (): Promise<void> => {
      for (let i = next++; i < ids.length; i = next++) opened[i] = await this.get(ids[i] as string).then((repo) => repo !== null, () => false);
    };
    await Promise.all(Array.from({ length: Math.min(OPEN_AT_ONCE, ids.length) }, opener));
    return { opened: opened.filter(Boolean).length, failed: ids.filter((_id, i) => !opened[i]) };
  }

  /** Never closes the organization for being idle from now on (its webhooks' workers hold its repository). */
  keep(orgId: string): void {
    this.kept.add(orgId);
  }

  /** Open now, and the writes queued across them. */
  stats(): { openOrganizations: number; queuedWrites: number } {
    let queuedWrites = 0;
    for (const repo of this.opened.values()) queuedWrites += repo.queuedWrites;
    return { openOrganizations: this.opened.size, queuedWrites };
  }

  /** Closes every repository, those being closed for being idle included. */
  async closeAll(): Promise<void> {
    this.opened.clear();
    const repos = await Promise.all([...this.open.values()].map((p) => p.catch(() => null)));
    this.open.clear();
    await Promise.all([...repos.map((r) => r?.close()), ...this.closing.values()]);
  }

  private forget(orgId: string, opening: Promise<R | null>): void {
    if (this.open.get(orgId) === opening) this.open.delete(orgId);
  }

  /** Closes the least recently used closable repositories while more than `maxOpen` are open. */
  private shed(): void {
    const { maxOpen, keepOpen } = this.deps;
    if (maxOpen <= 0 || this.opened.size <= maxOpen) return;
    for (const [orgId, repo] of this.opened) {
      if (this.opened.size <= maxOpen) return;
      if (this.holds.has(orgId) || this.kept.has(orgId) || !repo.idle || keepOpen?.(orgId)) continue;
      this.closeIdle(orgId, repo);
    }
  }

  private closeIdle(orgId: string, repo: R): void {
    const { logger, metrics } = this.deps;
    // Gone from both maps in this same step: the next user opens it again, after this close.
    this.opened.delete(orgId);
    this.open.delete(orgId);
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
