import type { IndexEntry } from '../repo/itemIndex.js';
import type { FolderRule, ItemRecord } from '../repo/itemRecord.js';
import type { IndexedItem, SearchDb } from './searchDb.js';

/** What the index reads of the repository: the live index, content, and the folder rules. */
export interface SearchSource {
  readonly headCommit: string | null;
  entries(): Iterable<IndexEntry>;
  get(path: string): IndexEntry | undefined;
  folderRule(folder: string): FolderRule | undefined;
  readContent(entry: Pick<IndexEntry, 'blobOid'>): Promise<string>;
}

/**
 * Who may read an item, as a small rank: the domain decides (inherit, folder
 * rules, defaults) and passes the function in; a query names the ranks its
 * caller may read.
 */
export type ReadNeed = (record: ItemRecord, rules: Pick<SearchSource, 'folderRule'>) => number;

/** One path's change: its live entry (none: gone), and the text to index when its content changed. */
export interface RowUpdate {
  path: string;
  entry: IndexEntry | undefined;
  text?: string;
}

/**
 * The index's rows, item by item: what each path was indexed from, and the
 * writes that keep a row in line with its item (content, read rank, removal).
 * The catch-up and the batch writes both go through it; transactions are theirs.
 */
export class IndexRows {
  /** What the index holds, by path (the same as its `items` table, kept in memory to compare cheaply). */
  indexed = new Map<string, IndexedItem>();

  constructor(
    readonly db: SearchDb,
    private readonly source: SearchSource,
    private readonly readNeed: ReadNeed,
  ) {
    this.indexed = db.indexed();
  }

  /** What `path` was indexed from, if it is indexed. */
  get(path: string): IndexedItem | undefined {
    return this.indexed.get(path);
  }

  /** Every indexed path. */
  paths(): Iterable<string> {
    return this.indexed.keys();
  }

  /** After a rollback: the in-memory copy is read again from the file. */
  reload(): void {
    this.indexed = this.db.indexed();
  }

  write(entry: IndexEntry, text: string, rules: Pick<SearchSource, 'folderRule'> = this.source): void {
    const { path } = entry.record;
    const need = this.readNeed(entry.record, rules);
    const id = this.db.put({ path, blob: entry.blobOid, need, text, id: this.indexed.get(path)?.id });
    this.indexed.set(path, { id, blob: entry.blobOid, need });
  }

  drop(path: string): void {
    const row = this.indexed.get(path);
    if (!row) return;
    this.db.remove(row.id);
    this.indexed.delete(path);
  }

  /** The row's read rank under `rules`; true when it moved. */
  refreshNeed(entry: IndexEntry, rules: Pick<SearchSource, 'folderRule'> = this.source): boolean {
    const row = this.indexed.get(entry.record.path);
    if (!row) return false;
    const need = this.readNeed(entry.record, rules);
    if (need === row.need) return false;
    this.db.setNeed(row.id, need);
    row.need = need;
    return true;
  }

  /** After a folder rule changed: every item whose read rank moved gets its new one. */
  refreshNeeds(): number {
    let changed = 0;
    for (const entry of this.source.entries()) if (entry.record.deletedAt === null && this.refreshNeed(entry)) changed++;
    return changed;
  }

  /** Inside a transaction: the updates' rows, read ranks under `rules`, and the head they bring the index to. */
  apply(updates: readonly RowUpdate[], head: string, rules: Pick<SearchSource, 'folderRule'>): void {
    for (const { path, entry, text } of updates) {
      if (!entry) this.drop(path);
      else if (text !== undefined) this.write(entry, text, rules);
      else this.refreshNeed(entry, rules);
    }
    this.db.setHead(head);
  }
}
