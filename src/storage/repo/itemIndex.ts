import type { FolderRule, ItemRecord } from './itemRecord.js';

/** What the hot path needs about one item, live or in the trash: no git read required. */
export interface IndexEntry {
  readonly record: ItemRecord;
  /** The content blob (at the path, or under `.trash/` once deleted). */
  readonly blobOid: string;
  /** The sidecar record blob. */
  readonly recordOid: string;
}

/** Changes whenever content or record changes: the basis of the HTTP ETag. */
export function versionTag(entry: IndexEntry): string {
  return `${entry.blobOid.slice(0, 20)}${entry.recordOid.slice(0, 20)}`;
}

/** A read-only look at the items, as committed or as a batch in progress will leave them. */
export interface IndexView {
  get(path: string): IndexEntry | undefined;
  /** True when some item (live or trashed) has `folder` among its ancestors. */
  hasEntriesUnder(folder: string): boolean;
  /** The folder's rule, if it has one. */
  folderRule(folder: string): FolderRule | undefined;
}

function forEachAncestor(path: string, fn: (folder: string) => void): void {
  for (let i = path.indexOf('/'); i > 0; i = path.indexOf('/', i + 1)) fn(path.slice(0, i));
}

/**
 * path -> entry for every item of an organization, plus the sorted list of
 * paths for listing and paging (kept sorted on insert: a list never sorts).
 * Paths are ASCII by the path rules, so `<` is the bytewise order.
 */
export class ItemIndex implements IndexView {
  private readonly entries = new Map<string, IndexEntry>();
  private readonly folderCounts = new Map<string, number>();
  private readonly sorted: string[] = [];
  private readonly rules = new Map<string, FolderRule>();

  folderRule(folder: string): FolderRule | undefined {
    return this.rules.get(folder);
  }

  setFolderRule(folder: string, rule: FolderRule | null): void {
    if (rule) this.rules.set(folder, rule);
    else this.rules.delete(folder);
  }

  folderRules(): FolderRule[] {
    return [...this.rules.values()].sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
  }

  get size(): number {
    return this.entries.size;
  }

  get(path: string): IndexEntry | undefined {
    return this.entries.get(path);
  }

  hasEntriesUnder(folder: string): boolean {
    return this.folderCount(folder) > 0;
  }

  /** How many items (live or trashed) lie under `folder`, at any depth. */
  folderCount(folder: string): number {
    return this.folderCounts.get(folder) ?? 0;
  }

  set(path: string, entry: IndexEntry | null): void {
    const had = this.entries.has(path);
    if (entry) this.entries.set(path, entry);
    else this.entries.delete(path);
    if (had === Boolean(entry)) return;
    const delta = entry ? 1 : -1;
    forEachAncestor(path, (folder) => {
      const count = (this.folderCounts.get(folder) ?? 0) + delta;
      if (count > 0) this.folderCounts.set(folder, count);
      else this.folderCounts.delete(folder);
    });
    const at = lowerBound(this.sorted, path);
    if (entry) this.sorted.splice(at, 0, path);
    else this.sorted.splice(at, 1);
  }

  /** Entries in path order, starting after `after` (exclusive), limited to paths starting with `prefix`. */
  *iterate(options: { prefix?: string; after?: string } = {}): Generator<IndexEntry> {
    const { prefix = '', after } = options;
    let i = lowerBound(this.sorted, after !== undefined && after >= prefix ? after : prefix);
    if (after !== undefined && this.sorted[i] === after) i++;
    for (; i < this.sorted.length; i++) {
      const path = this.sorted[i] as string;
      if (!path.startsWith(prefix)) return;
      yield this.entries.get(path) as IndexEntry;
    }
  }
}

/** What an overlay reads through: the committed index, or the overlay of the batch before. */
export interface IndexLayer {
  get(path: string): IndexEntry | undefined;
  folderCount(folder: string): number;
  folderRule(folder: string): FolderRule | undefined;
}

/**
 * The index as a batch of commits in progress sees it: the committed index
 * (or the batch before, still being flushed) plus the batch's own staged
 * changes. Applied to the index only once the batch is durable; dropped if
 * the flush fails.
 */
export class IndexOverlay implements IndexView, IndexLayer {
  private readonly staged = new Map<string, IndexEntry | null>();
  private readonly folderDelta = new Map<string, number>();
  private readonly stagedRules = new Map<string, FolderRule | null>();

  constructor(private base: IndexLayer) {}

  /** Reads through `base` from now on: the layer below was applied to it, so every answer stays the same. */
  rebase(base: IndexLayer): void {
    this.base = base;
  }

  folderCount(folder: string): number {
    return this.base.folderCount(folder) + (this.folderDelta.get(folder) ?? 0);
  }

  folderRule(folder: string): FolderRule | undefined {
    return this.stagedRules.has(folder) ? (this.stagedRules.get(folder) ?? undefined) : this.base.folderRule(folder);
  }

  setFolderRule(folder: string, rule: FolderRule | null): void {
    this.stagedRules.set(folder, rule);
  }

  get(path: string): IndexEntry | undefined {
    return this.staged.has(path) ? (this.staged.get(path) ?? undefined) : this.base.get(path);
  }

  hasEntriesUnder(folder: string): boolean {
    return this.folderCount(folder) > 0;
  }

  set(path: string, entry: IndexEntry | null): void {
    const had = this.get(path) !== undefined;
    this.staged.set(path, entry);
    if (had === Boolean(entry)) return;
    forEachAncestor(path, (folder) => this.folderDelta.set(folder, (this.folderDelta.get(folder) ?? 0) + (entry ? 1 : -1)));
  }

  applyTo(index: ItemIndex): void {
    for (const [path, entry] of this.staged) index.set(path, entry);
    for (const [folder, rule] of this.stagedRules) index.setFolderRule(folder, rule);
  }
}

function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as string) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
