import { secondsSince, silentMetrics, type Metrics } from '../../common/metrics.js';
import type { Logger } from '../../common/log.js';
import type { DerivedView, PublishedBatch, StagedView, StagingBatch } from '../repo/derivedViews.js';
import type { IndexEntry, IndexView } from '../repo/itemIndex.js';
import type { FolderRule, ItemRecord } from '../repo/itemRecord.js';
import { itemChanges } from '../repo/historyLog.js';
import { matchExpression, pathMatchExpression, type SearchTerms } from './matchExpression.js';
import { ReadGate } from './readGate.js';
import { SearchDb, type IndexedItem } from './searchDb.js';

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

/** One path's change in a batch: its live entry (none: gone), and the text to index when its content changed. */
interface Update {
  path: string;
  entry: IndexEntry | undefined;
  text?: string;
}

export interface SearchHit {
  entry: IndexEntry;
  score: number;
  snippet: string;
}

/** How much a start that rebuilds the index logs: a line every this many items. */
export const PROGRESS_EVERY = 5_000;
/** Items written per transaction while catching up (a crash loses at most this much of a rebuild). */
const CATCH_UP_CHUNK = 500;

/**
 * Staged batches between two checkpoints of the write-ahead log, each done while a pack is fsynced.
 * A single-item batch writes ~10–30 pages, so the log rarely reaches the 1,000 pages at which SQLite
 * would checkpoint inside a COMMIT, after the ref update, while the writers wait.
 */
const CHECKPOINT_EVERY = 16;

/** The longest snippet handed out, in characters. */
export const MAX_SNIPPET_CHARS = 300;

/**
 * One organization's full-text index: which live items hold which words, and
 * who may read each. A cache of the branch, like the index snapshot: at open
 * it is compared with the repository's index (content blob and read rank of
 * every live item) and brought up to date, reading only what differs; missing,
 * of another format or damaged, it is built again from the tree.
 *
 * It is a derived view of the write pipeline: each batch is applied in one
 * transaction before the writers are answered, so a 200 PUT is found by the
 * next request, and a delete, purge, restore or folder rule is in effect. The
 * transaction is written while the batch's pack is fsynced (`stage`) and
 * committed once the branch has moved; queries wait while it is open (the
 * ReadGate), so none sees a write that is not published. A batch that changes
 * a folder rule (any item's read rank may move) is applied after it is
 * published instead (`published`).
 */
export class SearchIndex implements DerivedView {
  readonly name = 'search index';
  /** What the index holds, by path (the same as its `items` table, kept in memory to compare cheaply). */
  private indexed = new Map<string, IndexedItem>();
  /** Set when a batch could not be applied, or while the catch-up started at open runs: the next query catches up first. */
  private stale = false;
  /** Batches that could not be applied, ever: a catch-up that saw one fail while it ran leaves the index stale. */
  private failedBatches = 0;
  private closed = false;
  /** The catch-up under way, if one is: `stage` declines meanwhile, and a second caller joins it. */
  private catchingUp: Promise<{ written: number; removed: number; needs: number }> | null = null;
  /** Batches staged since the write-ahead log was last copied into the file. */
  private stagedSinceCheckpoint = 0;
  /** Closed while a staged transaction is open: queries (and catch-ups) wait. */
  private readonly gate = new ReadGate();

  private constructor(
    private readonly db: SearchDb,
    private readonly source: SearchSource,
    private readonly readNeed: ReadNeed,
    private readonly logger: Logger,
    private readonly orgId: string,
    private readonly progressEvery: number,
    private readonly metrics: Metrics,
  ) {}

  static async open(args: {
    file: string;
    source: SearchSource;
    readNeed: ReadNeed;
    logger: Logger;
    orgId: string;
    /** A progress line every this many items while building (PROGRESS_EVERY unless given). */
    progressEvery?: number;
    /** Told the time of each query, whoever asks (the API, MCP, the CLI). */
    metrics?: Metrics;
    /**
     * Catch up after returning instead of before (the store opens its organizations so): the organization
     * serves reads and writes while the index is built, and searches wait for it. At 50,000 items of 2 KB
     * a build is ~25 s, which a first start would otherwise spend before its first answer.
     */
    inBackground?: boolean;
  }): Promise<SearchIndex> {
    const { file, logger, orgId } = args;
    let db = SearchDb.open(file, logger);
    if (!db.closedCleanly && !db.quickCheck()) {
      logger.warn('search index damaged (not closed cleanly, check failed); rebuilding', { org: orgId });
      db.close();
      SearchDb.remove(file);
      db = SearchDb.open(file, logger);
    }
    const index = new SearchIndex(db, args.source, args.readNeed, logger, orgId, args.progressEvery ?? PROGRESS_EVERY, args.metrics ?? silentMetrics);
    index.indexed = db.indexed();
    if (db.head !== args.source.headCommit || !db.closedCleanly) {
      if (args.inBackground) index.catchUpInBackground();
      else await index.catchUp();
    }
    return index;
  }

  /**
   * Starts a catch-up nobody waits for: queries wait for it (the index is stale until it ends) and batches
   * published meanwhile are applied as they come (see catchUp). One that fails leaves the index stale, so
   * the next query tries again.
   */
  private catchUpInBackground(): void {
    this.stale = true;
    this.catchUp().catch((err: unknown) => {
      if (this.closed) return; // stopped under it: the next open catches up
      this.logger.error('search index: catch-up failed; the next search tries again', { org: this.orgId, error: String(err) });
    });
  }

  /** Once no catch-up runs (for `verify`: a build under way is not a disagreement). */
  async settled(): Promise<void> {
    while (this.catchingUp) await this.catchingUp.catch(() => undefined);
  }

  /**
   * Brings every row in line with the repository; returns how many rows it changed. It never
   * overlaps a staged transaction: it starts only once none is open (its first look at the rows
   * must not count uncommitted ones), and batches published while it runs are applied after
   * their publish instead of staged (`stage` declines while `catchingUp`).
   */
  async catchUp(): Promise<{ written: number; removed: number; needs: number }> {
    if (this.catchingUp) return this.catchingUp;
    while (this.gate.closed) await this.gate.idle();
    // From the gate found open to `catchingUp` set, nothing awaits: no stage can begin in between.
    this.catchingUp = this.catchUpNow();
    try {
      return await this.catchingUp;
    } finally {
      this.catchingUp = null;
    }
  }

  private async catchUpNow(): Promise<{ written: number; removed: number; needs: number }> {
    const started = Date.now();
    const failedBefore = this.failedBatches;
    const live = new Map<string, IndexEntry>();
    for (const entry of this.source.entries()) if (entry.record.deletedAt === null) live.set(entry.record.path, entry);
    const removed = [...this.indexed.keys()].filter((path) => !live.has(path));
    const stale = [...live.values()].filter((e) => this.indexed.get(e.record.path)?.blob !== e.blobOid);
    const every = this.progressEvery;
    const building = stale.length > every;
    if (building) this.logger.info('search index: building', { org: this.orgId, items: stale.length, of: live.size });
    this.db.transaction(() => removed.forEach((path) => this.drop(path)));
    for (let i = 0; i < stale.length; i += CATCH_UP_CHUNK) {
      const chunk = stale.slice(i, i + CATCH_UP_CHUNK);
      const texts = await Promise.all(chunk.map((e) => this.textOf(e)));
      this.db.transaction(() =>
        chunk.forEach((e, j) => {
          // A batch published while the texts were read may have replaced this item: it has indexed the newer one.
          if (this.source.get(e.record.path) === e) this.write(e, texts[j] as string);
        }),
      );
      const done = i + chunk.length;
      if (building && (Math.floor(done / every) > Math.floor(i / every) || done === stale.length)) {
        this.logger.info('search index: building', { org: this.orgId, done, of: stale.length });
      }
    }
    const needs = this.db.transaction(() => {
      const n = this.refreshNeeds();
      // The head the rows are at now: batches published meanwhile were applied by `published`.
      this.db.setHead(this.source.headCommit);
      return n;
    });
    // A batch that failed while this ran may be in no row: stay stale, and the next query catches up again.
    this.stale = this.failedBatches !== failedBefore;
    const changed = { written: stale.length, removed: removed.length, needs };
    if (changed.written + changed.removed + changed.needs > 0) {
      this.logger.info('search index caught up', { org: this.orgId, ...changed, ms: Date.now() - started });
    }
    return changed;
  }

  /**
   * Writes what a batch will publish while its pack is fsynced, in a transaction left open (queries
   * wait) until the branch has moved (`commit`) or the write failed (`rollback`). Null, to follow
   * the batch in `published` instead, when it changes a folder rule, when the write failed before
   * its fsync, or when writing failed.
   */
  async stage(batch: StagingBatch): Promise<StagedView | null> {
    const { paths, rulesChanged } = changedPaths(batch);
    if (rulesChanged || this.catchingUp) return null;
    const updates = await this.updatesFor(paths, batch.state, batch.written);
    // Checked again after the awaits, with nothing awaited from here to the gate's closing.
    if (!(await batch.diskBusy) || this.catchingUp) return null;
    // No transaction is open here: the one of the batch before was committed before this batch's publish began.
    if (++this.stagedSinceCheckpoint >= CHECKPOINT_EVERY) {
      this.stagedSinceCheckpoint = 0;
      try {
        this.db.checkpoint();
      } catch (err) {
        // Only a head start: SQLite checkpoints by itself at a later COMMIT.
        this.logger.debug('search index: checkpoint skipped', { org: this.orgId, error: String(err) });
      }
    }
    // Closed before the transaction begins: whenever one is open, queries and catch-ups wait.
    this.gate.close();
    try {
      this.db.begin();
      this.apply(updates, batch.head, batch.state);
      this.db.flushPending();
    } catch (err) {
      try {
        this.undo();
      } finally {
        this.gate.open();
      }
      this.logger.warn('search index: could not stage a batch; applying it once published', { org: this.orgId, error: String(err) });
      return null;
    }
    return {
      commit: () => {
        try {
          this.db.commit();
        } catch (err) {
          this.undo();
          this.stale = true;
          this.failedBatches++;
          throw err;
        } finally {
          this.gate.open();
        }
      },
      rollback: () => {
        try {
          this.undo();
        } finally {
          this.gate.open();
        }
      },
    };
  }

  /** Applies what a batch published; on failure the index is marked stale and caught up before the next query. */
  async published(batch: PublishedBatch): Promise<void> {
    try {
      const { paths, rulesChanged } = changedPaths(batch);
      const updates = await this.updatesFor(paths, this.source, batch.written);
      await this.gate.idle();
      this.db.transaction(() => {
        this.apply(updates, batch.head, this.source);
        if (rulesChanged) this.refreshNeeds();
      });
    } catch (err) {
      this.stale = true;
      this.failedBatches++;
      // The in-memory copy may disagree with the rolled-back file: read it again at the catch-up.
      this.indexed = this.db.indexed();
      throw err;
    }
  }

  /** What each changed path becomes in `state`, with its text when its content changed. */
  private async updatesFor(paths: Iterable<string>, state: Pick<IndexView, 'get'>, written: ReadonlyMap<string, string>): Promise<Update[]> {
    const updates: Update[] = [];
    for (const path of paths) {
      const entry = state.get(path);
      const live = entry && entry.record.deletedAt === null ? entry : undefined;
      if (live && this.indexed.get(path)?.blob !== live.blobOid) {
        updates.push({ path, entry: live, text: written.get(live.blobOid) ?? (await this.textOf(live)) });
      } else {
        updates.push({ path, entry: live });
      }
    }
    return updates;
  }

  /** Inside a transaction: the updates' rows, read ranks under `rules`, and the head they bring the index to. */
  private apply(updates: readonly Update[], head: string, rules: Pick<SearchSource, 'folderRule'>): void {
    for (const { path, entry, text } of updates) {
      if (!entry) this.drop(path);
      else if (text !== undefined) this.write(entry, text, rules);
      else this.refreshNeed(entry, rules);
    }
    this.db.setHead(head);
  }

  /** Rolls the open transaction back; the in-memory copy is read again from the file. */
  private undo(): void {
    try {
      this.db.rollback();
    } finally {
      this.indexed = this.db.indexed();
    }
  }

  /**
   * The best matches the caller may read (`needs`: the ranks it may read; `prefixes`: the folders
   * it may look in, absent for anywhere, empty for nowhere), from `offset` on. Both filter inside
   * the query, so what the caller may not read is never counted or paged over.
   * Work per query is bounded by the match itself: the caller bounds the terms.
   */
  async search(args: {
    terms: SearchTerms;
    needs: readonly number[];
    prefixes?: readonly string[];
    limit: number;
    offset: number;
  }): Promise<SearchHit[]> {
    if (args.prefixes?.length === 0) return [];
    // The loop's last check and the reads below run with nothing awaited in between: no staged
    // transaction is open while the query reads.
    const started = process.hrtime.bigint();
    while (this.gate.closed || this.stale) {
      if (this.gate.closed) await this.gate.idle();
      else await this.catchUp();
    }
    const match = matchExpression(args.terms);
    const rows = this.db.search({
      match,
      pathMatch: pathMatchExpression(args.terms),
      needs: args.needs,
      ranges: args.prefixes?.map(prefixRange),
      limit: args.limit,
      offset: args.offset,
    });
    const hits: SearchHit[] = [];
    for (const row of rows) {
      const entry = this.source.get(row.path);
      // The index and the repository change together; a row without a live item would be a bug, never shown.
      if (!entry || entry.record.deletedAt !== null) continue;
      hits.push({ entry, score: Math.round(row.score * 1e6) / 1e6, snippet: clip(this.db.snippet(match, row.id)) });
    }
    this.metrics.search({ seconds: secondsSince(started) });
    return hits;
  }

  /** The paths where the index disagrees with the repository (for `verify`): none when it is in step. */
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

  close(): void {
    this.closed = true;
    this.db.close();
  }

  private write(entry: IndexEntry, text: string, rules: Pick<SearchSource, 'folderRule'> = this.source): void {
    const { path } = entry.record;
    const need = this.readNeed(entry.record, rules);
    const id = this.db.put({ path, blob: entry.blobOid, need, text, id: this.indexed.get(path)?.id });
    this.indexed.set(path, { id, blob: entry.blobOid, need });
  }

  private drop(path: string): void {
    const row = this.indexed.get(path);
    if (!row) return;
    this.db.remove(row.id);
    this.indexed.delete(path);
  }

  private refreshNeed(entry: IndexEntry, rules: Pick<SearchSource, 'folderRule'> = this.source): boolean {
    const row = this.indexed.get(entry.record.path);
    if (!row) return false;
    const need = this.readNeed(entry.record, rules);
    if (need === row.need) return false;
    this.db.setNeed(row.id, need);
    row.need = need;
    return true;
  }

  /** After a folder rule changed: every item whose read rank moved gets its new one. */
  private refreshNeeds(): number {
    let changed = 0;
    for (const entry of this.source.entries()) if (entry.record.deletedAt === null && this.refreshNeed(entry)) changed++;
    return changed;
  }

  /** What is searched besides the path: the content, which for a file item is its extracted text (contract §7). */
  private async textOf(entry: IndexEntry): Promise<string> {
    return this.source.readContent(entry);
  }
}

/** The item paths a batch's commits changed, and whether one of them changed a folder rule. */
function changedPaths(batch: Pick<PublishedBatch, 'commits'>): { paths: Set<string>; rulesChanged: boolean } {
  const paths = new Set<string>();
  let rulesChanged = false;
  for (const commit of batch.commits) {
    const items = itemChanges(commit);
    // A folder rule's commit names no item.
    if (items.length === 0) rulesChanged = true;
    for (const item of items) {
      paths.add(item.path);
      // A move leaves its old path: dropped there, indexed at the new one.
      if (item.from !== undefined) paths.add(item.from);
    }
  }
  return { paths, rulesChanged };
}

/** The paths under a folder prefix ("a/b/") as a range of strings: [prefix, prefix with its last "/" raised by one). */
function prefixRange(prefix: string): { from: string; to: string } {
  return { from: prefix, to: `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}` };
}

/** At most MAX_SNIPPET_CHARS characters, never cutting a marker pair in two. */
export function clip(snippet: string): string {
  if (snippet.length <= MAX_SNIPPET_CHARS) return snippet;
  let out = snippet.slice(0, MAX_SNIPPET_CHARS - 1);
  // An opened « whose » was cut off is closed, so the marks always pair up.
  if (out.lastIndexOf('«') > out.lastIndexOf('»')) out = `${out.slice(0, MAX_SNIPPET_CHARS - 2)}»`;
  return `${out}…`;
}
