import { paced } from '../common/paced.js';
import type { HistoryEntry } from '../storage/repo/historyLog.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { requireRole } from './access.js';
import type { ChangeView } from './changes.js';
import { loadCommitChanges, rememberBefore, rememberPublished, visibleChanges, type CommitChanges, type KnownRecords } from './commitChanges.js';
import { requireOwnCommit } from './history.js';
import type { Actor } from './keys.js';

/** One event: a commit, and its change-feed entries as one key sees them. */
export interface CommitEvent {
  organizationId: string;
  commitId: string;
  timestamp: string;
  changes: ChangeView[];
}

/** A commit walked by a listener: its event, or null when nothing in it is visible to the listener. */
export interface WalkedCommit {
  commitId: string;
  event: CommitEvent | null;
  /** `event` as JSON, made once per commit for every listener that sees the same (see `seenAs`). */
  json: string | null;
}

/**
 * What decides what a key sees of a commit: its role and its scopes (canSee reads nothing else). Listeners
 * alike share one filtered event and one JSON text: 200 agents on one key cost one filter, not 200.
 */
export function seenAs(actor: Actor): string {
  return `${actor.role}|${actor.scopes?.join('\n') ?? '*'}`;
}

interface Slot {
  facts: Promise<CommitChanges>;
  size: number;
  seen: Map<string, { event: CommitEvent | null; json: string | null }>;
}

/** Listeners woken per turn of the event loop. */
const WAKE_PER_TURN = 8;

/**
 * Wakes the listeners a few per turn of the event loop, from the turn after the writers were answered:
 * between two turns Node reads the sockets, so the next request (a writer's next PUT) starts at once and
 * its fsync overlaps the rest of the fan-out, instead of waiting behind 200 listeners' work.
 */
function wakeInTurns(listeners: ReadonlyArray<() => void>, from: number): void {
  setImmediate(() => {
    const end = Math.min(listeners.length, from + WAKE_PER_TURN);
    for (let i = from; i < end; i++) listeners[i]?.();
    if (end < listeners.length) wakeInTurns(listeners, end);
  });
}

/**
 * The stream writes per second one organization's listeners are woken for at most under a steady write load
 * (KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND): see `wakeGapMs`.
 */
export const STREAM_WRITES_PER_SECOND = 1000;
/** The shortest time between two wake-ups of one organization's listeners, whatever their number. */
const WAKE_GAP_MIN_MS = 50;
/** The longest: the most a listener waits for a commit under a steady write load, whatever their number. */
const WAKE_GAP_MAX_MS = 1000;

/**
 * The time between two wake-ups of an organization's `streams` listeners under a steady write load, so that
 * they write at most `writesPerSecond` times a second in all: 50 ms up to 50 listeners at the default 1,000,
 * 200 ms for 200, at most 1 s. Each wake-up costs a socket write per listener (and, on the listeners' side, a
 * read each), whatever the number of commits it carries: on one machine 200 of them take a core for a few
 * milliseconds, and the writers' requests that arrive meanwhile wait for it (README, Events, Figures). Fewer
 * wake-ups, each carrying more commits, is what keeps the writers' latency, at the price of the event lag.
 * A quiet organization's listeners still hear of a commit at once (see `paced`).
 */
export function wakeGapMs(streams: number, writesPerSecond: number): number {
  return Math.min(WAKE_GAP_MAX_MS, Math.max(WAKE_GAP_MIN_MS, (streams * 1000) / writesPerSecond));
}

/**
 * How much of the recent commits' facts is kept for the listeners that have not walked them yet, counted in
 * commits plus the items they changed: a few thousand small commits, or a few large ones, never unbounded.
 */
const FACTS_KEPT = 20_000;

/**
 * The events of every organization, derived from main's history (never from memory), so a listener
 * resumes from any commit id after a restart with no gap and no duplicate. The write pipeline tells the
 * feed after each published batch (it is one more derived view of the repository); the feed wakes the
 * listeners, and each one walks the commits after its own cursor at its own pace. A commit's facts are
 * read from git once and shared; each listener only decides what its key may see.
 */
export class EventFeed {
  /** Oldest first; `kept` is their total weight (a commit and its items). */
  private readonly facts = new Map<string, Slot>();
  private kept = 0;
  /** Records after the commits read, for the next commit of the same item (see loadCommitChanges). */
  private readonly known: KnownRecords = new Map();
  private readonly listeners = new WeakMap<OrgRepo, Set<() => void>>();

  constructor(private readonly pace: { streamWritesPerSecond: number } = { streamWritesPerSecond: STREAM_WRITES_PER_SECOND }) {}

  /** The commit a listener starts after: the one it names (it must be on main), else the head (only new commits). */
  start(args: { repo: OrgRepo; actor: Actor; since?: string }): string | null {
    requireRole(args.actor, 'knowledge:read');
    return args.since === undefined ? args.repo.headCommit : requireOwnCommit(args.repo, args.since, 'since');
  }

  /** Calls `wake` after each batch published on `repo`'s main, until the returned function is called. */
  watch(repo: OrgRepo, wake: () => void): () => void {
    let set = this.listeners.get(repo);
    if (!set) {
      const listeners = new Set<() => void>();
      set = listeners;
      this.listeners.set(repo, listeners);
      // Told after the history log (added first, at open): a woken listener finds the new commits there.
      const wake = paced(
        () => wakeInTurns([...listeners], 0),
        () => wakeGapMs(listeners.size, this.pace.streamWritesPerSecond),
      );
      repo.addView({
        name: 'event stream',
        // Staged before the index moves: the records before the batch are still today's (see rememberBefore).
        stage: async (batch) => {
          if (listeners.size > 0) rememberBefore(repo, batch.parent, batch.commits, this.known);
          return null;
        },
        published: (batch) => {
          if (listeners.size === 0) return;
          rememberPublished(repo, batch.commits, this.known);
          this.trimKnown();
          wake();
        },
      });
    }
    const listeners = set;
    listeners.add(wake);
    return () => listeners.delete(wake);
  }

  /**
   * The commits after `cursor`, oldest first, each with what `actor` may see of it: one at a time, so a
   * listener writes each as soon as it is read and stops walking whenever it likes.
   */
  async *walk(args: { repo: OrgRepo; actor: Actor; cursor: string | null }): AsyncGenerator<WalkedCommit> {
    const { repo, actor, cursor } = args;
    if (cursor === null) return;
    const profile = seenAs(actor);
    for (const entry of repo.history.after(cursor) ?? []) {
      const slot = this.slotOf(repo, entry);
      const facts = await slot.facts;
      let seen = slot.seen.get(profile);
      if (!seen) {
        const changes = visibleChanges(facts, actor);
        const event = changes.length === 0 ? null : { organizationId: repo.orgId, commitId: entry.commitId, timestamp: facts.timestamp, changes };
        seen = { event, json: event && JSON.stringify(event) };
        slot.seen.set(profile, seen);
      }
      yield { commitId: entry.commitId, ...seen };
    }
  }

  private slotOf(repo: OrgRepo, entry: HistoryEntry): Slot {
    const key = `${repo.orgId}:${entry.commitId}`;
    const kept = this.facts.get(key);
    if (kept) return kept;
    const facts = loadCommitChanges(repo, entry, this.known);
    this.trimKnown();
    const slot: Slot = { facts, size: 1, seen: new Map() };
    this.facts.set(key, slot);
    facts.then(
      (f) => {
        // Weighed once read (unless already evicted): a commit of 1,000 items holds 1,000 items' records.
        if (this.facts.get(key) !== slot) return;
        slot.size = 1 + f.items.length + f.ruled.length;
        this.kept += slot.size - 1;
        this.evict();
      },
      // A failed read is not kept: the next listener tries again.
      () => {
        if (this.facts.get(key) === slot) this.forget(key);
      },
    );
    this.kept += 1;
    this.evict();
    return slot;
  }

  private trimKnown(): void {
    // Oldest first out: the records a live stream needs next are the newest.
    for (const old of this.known.keys()) {
      if (this.known.size <= FACTS_KEPT) break;
      this.known.delete(old);
    }
  }

  private evict(): void {
    for (const key of this.facts.keys()) {
      if (this.kept <= FACTS_KEPT || this.facts.size <= 1) return;
      this.forget(key);
    }
  }

  private forget(key: string): void {
    const slot = this.facts.get(key);
    if (!slot) return;
    this.facts.delete(key);
    this.kept -= slot.size;
  }
}
