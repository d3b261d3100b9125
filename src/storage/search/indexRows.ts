import type { IndexEntry } from '../repo/itemIndex.js';
import type { FolderRule, ItemRecord } from '../repo/itemRecord.js';
import type { RankIndex } from './rankIndex.js';
import type { IndexedItem, SearchDb } from './searchDb.js';
import { ITEMS_PER_TURN, nextTurn } from '../../common/turn.js';

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
 *
 * What a path was indexed from is asked of the file's `items` table (a lookup
 * by its unique path), never copied into the heap: a copy of 50,000 rows held
 * ~9 MiB of V8 heap for the server's life, and reading it at every start
 * filled SQLite's page cache with the whole table (issue 17). Work over every
 * row (the catch-up, a folder rule's new read ranks) reads them all once, for
 * its own time.
 */
export class IndexRows {
  constructor(
    readonly db: SearchDb,
    private readonly source: SearchSource,
    private readonly readNeed: ReadNeed,
    /** The in-memory copy, changed with every row (its changes follow the file's transactions). */
    private readonly rank: RankIndex,
  ) {}

  /** What `path` was indexed from, if it is indexed. */
  get(path: string): IndexedItem | undefined {
    return this.db.row(path);
  }

  /** Every indexed row, by path, as the file holds them now (a copy for one pass over them). */
  all(): Map<string, IndexedItem> {
    return this.db.indexed();
  }

  /**
   * Every indexed row, by path, read in pages of `pageSize` rows with a turn of the event loop between them
   * (at 50,000 rows one read held it ~150 ms). Batches may write between the pages: a row read may be stale
   * by the end, which the caller must allow for (see catchUp.ts).
   */
  async allInPages(pageSize = ITEMS_PER_TURN): Promise<Map<string, IndexedItem>> {
    const out = new Map<string, IndexedItem>();
    for (let after = this.db.indexedPage(0, pageSize, out); after !== null; after = this.db.indexedPage(after, pageSize, out)) {
      await nextTurn();
    }
    return out;
  }

  /**
   * Of `entries`, those whose read rank under the rules now differs from their row's in `rows` (a copy
   * read earlier), worked out with a turn of the event loop every `pageSize` entries. What they find is
   * only a list to look at again (`refreshNeedsOf`): rows and rules may have changed since.
   */
  async needsMoved(entries: readonly IndexEntry[], rows: ReadonlyMap<string, IndexedItem>, pageSize = ITEMS_PER_TURN): Promise<IndexEntry[]> {
    const moved: IndexEntry[] = [];
    for (let i = 0; i < entries.length; i++) {
      if (i > 0 && i % pageSize === 0) await nextTurn();
      const entry = entries[i] as IndexEntry;
      const row = rows.get(entry.record.path);
      if (row && entry.record.deletedAt === null && row.need !== this.readNeed(entry.record, this.source)) moved.push(entry);
    }
    return moved;
  }

  /**
   * Inside a transaction: each of `entries` still the live one at its path gets the read rank the rules
   * give it now, against its row as the file holds it now; returns how many moved.
   */
  refreshNeedsOf(entries: readonly IndexEntry[]): number {
    let changed = 0;
    for (const entry of entries) {
      if (this.source.get(entry.record.path) === entry && this.refreshNeedOf(entry, this.source, this.get(entry.record.path))) changed++;
    }
    return changed;
  }

  /** Adds or replaces the row of `entry`, where the caller has read what the row holds now (`row`; undefined: none). */
  writeOver(entry: IndexEntry, text: string, rules: Pick<SearchSource, 'folderRule'>, row: IndexedItem | undefined): void {
    const { path } = entry.record;
    const need = this.readNeed(entry.record, rules);
    const rowid = this.db.put({ path, blob: entry.blobOid, need, text, id: row?.id });
    this.rank.put({ path, text, need, rowid });
  }

  /** Removes the row (`row`: what it holds, when the caller has read it already). */
  drop(path: string, row: IndexedItem | undefined = this.get(path)): void {
    if (row) this.db.remove(row.id);
    this.rank.remove(path);
  }

  /** The row's read rank under `rules` (`row`: what it holds now); true when it moved. */
  private refreshNeedOf(entry: IndexEntry, rules: Pick<SearchSource, 'folderRule'>, row: IndexedItem | undefined): boolean {
    if (!row) return false;
    const need = this.readNeed(entry.record, rules);
    if (need === row.need) return false;
    this.db.setNeed(row.id, need);
    this.rank.setNeed(entry.record.path, need);
    return true;
  }

  /** After a folder rule changed: every item whose read rank moved gets its new one (the rows read in one pass). */
  refreshNeeds(): number {
    const rows = this.all();
    let changed = 0;
    for (const entry of this.source.entries()) {
      if (entry.record.deletedAt === null && this.refreshNeedOf(entry, this.source, rows.get(entry.record.path))) changed++;
    }
    return changed;
  }

  /**
   * Inside a transaction: the updates' rows, read ranks under `rules`, and the head they bring the index to.
   * Written in the order of their rowids, new rows (whose rowids come next) last: FTS5 keeps a transaction's
   * postings in a hash only while rowids rise, and a write to a lower rowid first flushes the hash as a segment of
   * its own (sqlite3Fts5IndexBeginWrite). In rowid order, a batch of 8 changed rows of 30 words cost 15 µs a row
   * to write, against 70-120 µs in the random order of the paths (50-300 words: 4-5x, measured on SQLite 3.53).
   */
  apply(updates: readonly RowUpdate[], head: string, rules: Pick<SearchSource, 'folderRule'>): void {
    const rows = updates.map((update) => ({ update, row: this.get(update.path) }));
    rows.sort((a, b) => byRowid(a.row, b.row));
    for (const { update, row } of rows) {
      const { path, entry, text } = update;
      if (!entry) this.drop(path, row);
      else if (text !== undefined) this.writeOver(entry, text, rules, row);
      else this.refreshNeedOf(entry, rules, row);
    }
    this.db.setHead(head);
  }

  /** The paths where the rows disagree with the repository (for `verify`): none when they are in step. */
  differences(): string[] {
    const problems: string[] = [];
    const onDisk = this.db.indexed();
    const live = new Set<string>();
    for (const entry of this.source.entries()) {
      if (entry.record.deletedAt !== null) continue;
      const { path } = entry.record;
      live.add(path);
      const row = onDisk.get(path);
      if (!row) problems.push(`search index: ${path} is missing`);
      else if (row.blob !== entry.blobOid) problems.push(`search index: ${path} holds an older content`);
      else if (row.need !== this.readNeed(entry.record, this.source)) problems.push(`search index: ${path} has a stale read permission`);
    }
    for (const path of onDisk.keys()) if (!live.has(path)) problems.push(`search index: ${path} is indexed but not a live item`);
    if (this.db.head !== this.source.headCommit) problems.push(`search index: at ${this.db.head ?? 'no commit'}, the branch at ${this.source.headCommit ?? 'none'}`);
    return problems;
  }
}

/** Rows by rowid, rows not yet written (undefined) after all others, in their order (the sort is stable): see `apply`. */
export function byRowid(a: IndexedItem | undefined, b: IndexedItem | undefined): number {
  if (a === undefined) return b === undefined ? 0 : 1;
  return b === undefined ? -1 : a.id - b.id;
}
