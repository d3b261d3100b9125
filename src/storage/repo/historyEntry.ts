import { messageBody, parseAllTrailers, type ItemAction } from './commitMessage.js';

/** One item's change in a commit: `path` is where the item is after it, `from` (moves only) where it was before. */
export interface ItemChange {
  id: string;
  path: string;
  action: ItemAction;
  from?: string;
}

/** One commit on main, as history and the change feed need it. */
export interface HistoryEntry {
  commitId: string;
  parent: string | null;
  /**
   * Present when the commit changed an item (its `Item-*` trailers): the first item it names, and in
   * an item's own history (`itemHistory`) that item's change.
   */
  item?: ItemChange;
  /** Every item the commit changed, in order: present only when there are several (`POST /commits`). */
  items?: readonly ItemChange[];
  /** The message without the store's trailers. */
  message: string;
  author: { name: string; email: string };
  /** Whole seconds since the epoch. */
  timestamp: number;
}

export interface CommitFacts {
  parent: string | null;
  message: string;
  author: { name: string; email: string; timestamp: number };
}

/** Every item a commit changed (none for a folder rule's commit). */
export function itemChanges(entry: HistoryEntry): readonly ItemChange[] {
  return entry.items ?? (entry.item ? [entry.item] : []);
}

/**
 * The entries with a commit of several items split into one entry per item (same commit, `item` that
 * item's change, no `items`): what per-item readers (history, the change feed) walk.
 */
export function perItem(entries: readonly HistoryEntry[]): HistoryEntry[] {
  return entries.flatMap((e) => {
    if (!e.items) return [e];
    const { items, ...rest } = e;
    return items.map((item) => ({ ...rest, item }));
  });
}

export function historyEntry(commitId: string, facts: CommitFacts): HistoryEntry {
  const items = parseAllTrailers(facts.message).map(
    (t): ItemChange => ({ id: t.itemId, path: t.itemPath, action: t.action, ...(t.fromPath ? { from: t.fromPath } : {}) }),
  );
  return {
    commitId,
    parent: facts.parent,
    ...(items[0] ? { item: items[0] } : {}),
    ...(items.length > 1 ? { items } : {}),
    message: messageBody(facts.message),
    author: { name: facts.author.name, email: facts.author.email },
    timestamp: facts.author.timestamp,
  };
}
