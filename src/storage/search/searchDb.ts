import type { Logger } from '../../common/log.js';
import { rankingQuery, searchRowOf, type RankingArgs, type SearchRow } from './ftsQuery.js';
import type { TransactionFollower } from './rankIndex.js';
import { processPageCaches, type PageCaches, type PageCacheSeat } from './pageCaches.js';
import { metaOf, openSearchFile, passesQuickCheck, removeSearchFile, type Database } from './searchFile.js';

type Statement = ReturnType<Database['prepare']>;

/** What the index holds for one item: its row, the content it was built from, and who may read it. */
export interface IndexedItem {
  id: number;
  /** The content blob the row was built from: a different one means the row is stale. */
  blob: string;
  /** The read requirement, as a rank the caller defines (see SearchIndex). */
  need: number;
}

export type { SearchRow } from './ftsQuery.js';

/** Rows whose bodies one statement reads (`bodies`): a page of results in one or a few. */
const BODIES_AT_ONCE = 32;

/**
 * The SQLite file of one organization's search index: an FTS5 table of paths
 * and contents, beside a table of what each row was built from. A second FTS5
 * table holds the paths alone, with the same tokenizer and rowids: whether a
 * term is in a path is then a lookup in a small index of paths, where asking
 * the `docs` table (`path : term`) reads the term's whole doclist, contents
 * included (5 ms of a 32 ms query for two common words, measured). SQLite runs
 * as WebAssembly (node-sqlite3-wasm): no native build at install.
 *
 * `synchronous = OFF`: the index is a cache of the repository, so it never
 * waits for the disk. Its write-ahead log still keeps it whole across a crash
 * of the process; what a power loss could damage is caught at the next open
 * (a file not closed cleanly is checked) and rebuilt.
 */
export class SearchDb {
  private readonly statements = new Map<string, Statement>();
  private follower: TransactionFollower | undefined;

  private constructor(
    private readonly db: Database,
    /** False when the last process to use the file did not close it (a crash). */
    readonly closedCleanly: boolean,
    /** Its page cache's share of the process's (pageCaches.ts). */
    private readonly seat: PageCacheSeat,
  ) {}

  /**
   * Opens (or creates) the file, its page cache a share of `caches`. One that cannot be read, or holds
   * another format, is deleted and started afresh: it is only a cache.
   */
  static open(file: string, logger: Logger, caches: PageCaches = processPageCaches): SearchDb {
    let db: Database | undefined;
    // Seated first: the share is lowered for the others before this one reads a page.
    const seat = caches.join((kib) => db?.exec(`PRAGMA cache_size = -${kib}`));
    try {
      const opened = openSearchFile(file, logger, seat.kib);
      db = opened.db;
      return new SearchDb(opened.db, opened.closedCleanly, seat);
    } catch (err) {
      seat.leave();
      throw err;
    }
  }

  /** KiB SQLite's page cache may hold now, as SQLite says (`PRAGMA cache_size`). */
  pageCacheKib(): number {
    const row = this.db.get('PRAGMA cache_size');
    return -Number(row?.cache_size);
  }

  /** Deletes the index file and what SQLite keeps beside it. */
  static remove(file: string): void {
    removeSearchFile(file);
  }

  /** The head commit the index was last brought up to, or null when never. */
  get head(): string | null {
    return metaOf(this.db, 'head');
  }

  /** Every indexed item, by path. */
  indexed(): Map<string, IndexedItem> {
    const out = new Map<string, IndexedItem>();
    const rows = this.use('SELECT id, path, blob, need FROM items', (st) => st.all());
    for (const row of rows) out.set(String(row.path), { id: Number(row.id), blob: String(row.blob), need: Number(row.need) });
    return out;
  }

  /**
   * Up to `limit` indexed items whose row id is above `afterId`, in row id order, into `out`; returns the last
   * row id read, or null when there were none (a read of every row in pages, between which others may run).
   */
  indexedPage(afterId: number, limit: number, out: Map<string, IndexedItem>): number | null {
    const rows = this.use('SELECT id, path, blob, need FROM items WHERE id > ? ORDER BY id LIMIT ?', (st) => st.all([afterId, limit]));
    let last: number | null = null;
    for (const row of rows) {
      last = Number(row.id);
      out.set(String(row.path), { id: last, blob: String(row.blob), need: Number(row.need) });
    }
    return last;
  }

  /** What one path was indexed from, by the `items` table's unique index on its path. */
  row(path: string): IndexedItem | undefined {
    // `all`, not `get`: see `snippet`.
    const [row] = this.use('SELECT id, blob, need FROM items WHERE path = ?', (st) => st.all([path]));
    return row ? { id: Number(row.id), blob: String(row.blob), need: Number(row.need) } : undefined;
  }

  /** Runs `fn` in one transaction: all of it lands, or none. */
  transaction<T>(fn: () => T): T {
    this.begin();
    try {
      const out = fn();
      this.commit();
      return out;
    } catch (err) {
      this.rollback();
      throw err;
    }
  }

  begin(): void {
    this.db.exec('BEGIN');
    this.follower?.begin();
  }

  /** `follower` (one at most) hears of every transaction from now on. */
  follow(follower: TransactionFollower): void {
    this.follower = follower;
  }

  /** Copies the write-ahead log into the file now, so that no COMMIT has to (SQLite does it at the COMMIT that fills 1,000 pages). */
  checkpoint(): void {
    this.db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  }

  commit(): void {
    this.db.exec('COMMIT');
    this.follower?.commit();
  }

  /** Undoes the open transaction, if one is open (a failed COMMIT may have ended it already). */
  rollback(): void {
    try {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } finally {
      this.follower?.rollback();
    }
  }

  /**
   * Does now, inside the open transaction, the work FTS5 would otherwise do at COMMIT: writing its
   * pending terms as a new segment and merging segments (automerge). Opening a savepoint makes FTS5
   * flush (its xSavepoint). Measured on 50,000 items, one item per transaction: COMMIT falls from
   * 1.7–2.2 ms of CPU on average to 0.6–0.7 ms, the rest moved here.
   */
  flushPending(): void {
    this.db.exec('SAVEPOINT flush; RELEASE flush');
  }

  setHead(head: string | null): void {
    if (head === null) this.use('DELETE FROM meta WHERE key = ?', (st) => st.run(['head']));
    else this.use('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)', (st) => st.run(['head', head]));
  }

  /** Adds or replaces an item's row; returns its id. */
  put(args: { path: string; blob: string; need: number; text: string; id?: number }): number {
    const { path, blob, need, text } = args;
    const existing = args.id;
    let id: number;
    if (existing === undefined) {
      id = Number(this.use('INSERT INTO items (path, blob, need) VALUES (?, ?, ?)', (st) => st.run([path, blob, need]).lastInsertRowid));
      // A row's path never changes (a path is its key), so `paths` is written once per row.
      this.use('INSERT INTO paths (rowid, path) VALUES (?, ?)', (st) => st.run([id, path]));
    } else {
      id = existing;
      this.use('DELETE FROM docs WHERE rowid = ?', (st) => st.run([existing]));
      this.use('UPDATE items SET blob = ?, need = ? WHERE id = ?', (st) => st.run([blob, need, existing]));
    }
    this.use('INSERT INTO docs (rowid, path, body) VALUES (?, ?, ?)', (st) => st.run([id, path, text]));
    return id;
  }

  remove(id: number): void {
    this.use('DELETE FROM docs WHERE rowid = ?', (st) => st.run([id]));
    this.use('DELETE FROM paths WHERE rowid = ?', (st) => st.run([id]));
    this.use('DELETE FROM items WHERE id = ?', (st) => st.run([id]));
  }

  setNeed(id: number, need: number): void {
    this.use('UPDATE items SET need = ? WHERE id = ?', (st) => st.run([need, id]));
  }

  /**
   * The best matches, path matches first, then by BM25, then by path (a stable order for paging).
   * Only rows whose `need` is in `needs` are ever read past the match: a row the caller may not
   * read is neither counted nor paged over.
   */
  search(args: RankingArgs): SearchRow[] {
    const { sql, values } = rankingQuery(args);
    return this.use(sql, (st) => st.all(values)).map(searchRowOf);
  }

  /** The row's content around its best match, matches wrapped in « ». */
  snippet(match: string, id: number): string {
    // `all`, not `get`: a statement left before its end stays active, and an active statement keeps a checkpoint from running.
    const [row] = this.use("SELECT snippet(docs, 1, '«', '»', '…', 32) AS s FROM docs WHERE docs MATCH ? AND rowid = ?", (st) => st.all([match, id]));
    return row ? String(row.s) : '';
  }

  /** A row's content: from FTS5's own content table (`c1` is `body`) by its key, a B-tree lookup, no MATCH. */
  body(id: number): string {
    const [row] = this.use('SELECT c1 AS body FROM docs_content WHERE id = ?', (st) => st.all([id]));
    return row ? String(row.body) : '';
  }

  /**
   * The stored bodies of rows, as their UTF-8 bytes, by rowid: one statement for up to BODIES_AT_ONCE rows (a page's
   * snippets), and bytes rather than text, which the binding would scan for its end and decode in JavaScript
   * (6.5 µs a body of 2 KB one by one as text, 3.8 µs ten at a time as bytes, measured). A row not found is absent.
   */
  bodies(ids: readonly number[]): Map<number, Uint8Array> {
    const found = new Map<number, Uint8Array>();
    for (let at = 0; at < ids.length; at += BODIES_AT_ONCE) {
      const chunk = ids.slice(at, at + BODIES_AT_ONCE);
      const sql = `SELECT id, CAST(c1 AS BLOB) AS body FROM docs_content WHERE id IN (${chunk.map(() => '?').join(',')})`;
      for (const row of this.use(sql, (st) => st.all(chunk))) {
        if (row.body instanceof Uint8Array) found.set(Number(row.id), row.body);
      }
    }
    return found;
  }

  /** Up to `limit` rows after rowid `after`, in rowid order (to build a copy of the index; `body` reads a row's content). */
  rowsAfter(after: number, limit: number): Array<{ id: number; path: string; need: number }> {
    const sql = 'SELECT id, path, need FROM items WHERE id > ? ORDER BY id LIMIT ?';
    return this.use(sql, (st) => st.all([after, limit])).map((r) => ({ id: Number(r.id), path: String(r.path), need: Number(r.need) }));
  }

  /**
   * Runs `fn` (synchronous) with a page cache of at most `kib` instead (for one pass over every row, whose pages are
   * read once: at its full share it would grow the WebAssembly heap, which never shrinks, for nothing kept).
   */
  withPageCache<T>(kib: number, fn: () => T): T {
    this.db.exec(`PRAGMA cache_size = -${Math.min(kib, this.seat.kib)}`);
    try {
      return fn();
    } finally {
      this.db.exec(`PRAGMA cache_size = -${this.seat.kib}`);
    }
  }

  /** SQLite's own consistency check of the file (pages, free list, indexes). */
  quickCheck(): boolean {
    return passesQuickCheck(this.db);
  }

  /** Closes the file; a clean close is remembered, so the next open skips the check. */
  close(): void {
    this.closeFile(true);
  }

  /** Closes the file as it stands: one opened after a crash stays marked so (for its check, then a catch-up). */
  release(): void {
    this.closeFile(false);
  }

  private closeFile(clean: boolean): void {
    try {
      for (const stmt of this.statements.values()) stmt.finalize();
      this.statements.clear();
      if (clean) this.db.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('clean', '1')");
      this.db.close();
    } finally {
      this.seat.leave();
    }
  }

  /**
   * Runs `fn` with the statement for `sql`, compiled once and kept (each lives in the WebAssembly
   * heap until finalized). A statement whose step failed cannot be reset for its next use: it is
   * dropped, and compiled afresh next time.
   */
  private use<T>(sql: string, fn: (stmt: Statement) => T): T {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    try {
      return fn(stmt);
    } catch (err) {
      this.statements.delete(sql);
      try {
        stmt.finalize();
      } catch {
        // Finalizing reports the step's error again; it is the one being thrown.
      }
      throw err;
    }
  }
}
