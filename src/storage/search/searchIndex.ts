import { secondsSince, silentMetrics, type Metrics } from '../../common/metrics.js';
import type { Logger } from '../../common/log.js';
import type { DerivedView, PublishedBatch, StagedView, StagingBatch } from '../repo/derivedViews.js';
import type { IndexEntry } from '../repo/itemIndex.js';
import { changedPaths, updatesFor } from './batchChanges.js';
import { catchUpRows, PROGRESS_EVERY, type CaughtUp } from './catchUp.js';
import { IndexRows, type ReadNeed, type SearchSource } from './indexRows.js';
import { matchExpression, pathMatchExpression, type SearchTerms } from './matchExpression.js';
import { plainSearch, plainTerms } from './plainSearch.js';
import { RankCopy } from './rankCopy.js';
import { ReadGate } from './readGate.js';
import { checkSearchFile } from './fileCheck.js';
import type { PageCaches } from './pageCaches.js';
import { SearchDb } from './searchDb.js';
import { checkFile } from './searchFile.js';
import { hitsOf, prefixRange, type SearchHit } from './searchHits.js';

export { clip, MAX_SNIPPET_CHARS } from './searchHits.js';
export { PROGRESS_EVERY } from './catchUp.js';
export type { ReadNeed, SearchSource } from './indexRows.js';
export type { SearchHit } from './searchHits.js';

/**
 * Staged batches between two checkpoints of the write-ahead log, each done while a ref update is fsynced.
 * A single-item batch writes ~10–30 pages, so the log rarely reaches the 1,000 pages at which SQLite
 * would checkpoint inside a COMMIT, after the ref update, while the writers wait.
 */
const CHECKPOINT_EVERY = 16;

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
 * transaction is written while the batch's ref update is fsynced (`stage`) and
 * committed once the branch has moved; queries wait while it is open (the
 * ReadGate), so none sees a write that is not published. A batch that changes
 * a folder rule (any item's read rank may move) is applied after it is
 * published instead (`published`).
 */
export class SearchIndex implements DerivedView {
  readonly name = 'search index';
  private readonly rows: IndexRows;
  /** Set when a batch could not be applied, or while the catch-up started at open runs: the next query catches up first. */
  private stale = false;
  /** Batches that could not be applied, ever: a catch-up that saw one fail while it ran leaves the index stale. */
  private failedBatches = 0;
  private closed = false;
  /** The catch-up under way, if one is: `stage` declines meanwhile, and a second caller joins it. */
  private catchingUp: Promise<CaughtUp> | null = null;
  /** Batches staged since the write-ahead log was last copied into the file. */
  private stagedSinceCheckpoint = 0;
  /** Closed while a staged transaction is open: queries (and catch-ups) wait. */
  private readonly gate = new ReadGate();
  /** The rows again, in memory: plain-word queries are ranked there once it is loaded. */
  private readonly copy: RankCopy;

  private constructor(
    private readonly db: SearchDb,
    private readonly source: SearchSource,
    private readonly readNeed: ReadNeed,
    private readonly logger: Logger,
    private readonly orgId: string,
    private readonly progressEvery: number,
    private readonly metrics: Metrics,
    rankTuning?: { compactAt?: number; topFrom?: number; topSize?: number },
  ) {
    this.copy = new RankCopy({ db, gate: this.gate, stopped: () => this.closed, logger, orgId, progressEvery }, rankTuning);
    this.rows = new IndexRows(db, source, readNeed, this.copy.rank);
  }

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
    /** RankIndex's thresholds (tests). */
    rankTuning?: { compactAt?: number; topFrom?: number; topSize?: number };
    /** The budget its SQLite page cache has a share of (the process's default unless given; pageCaches.ts). */
    pageCaches?: PageCaches;
    /** How a file not closed cleanly is checked (default: in a worker thread, checkSearchFile; tests). */
    checkFile?: (file: string) => Promise<boolean>;
  }): Promise<SearchIndex> {
    const { file, logger, orgId, pageCaches } = args;
    let db = SearchDb.open(file, logger, pageCaches);
    if (!db.closedCleanly) {
      // Checked in a worker thread, the file closed meanwhile (fileCheck.ts): in place it held the event loop for
      // seconds. Reopened after, it is still marked as not closed cleanly, so it is caught up below.
      db.release();
      const started = Date.now();
      const sound = await (args.checkFile ?? checkSearchFile)(file).catch((err: unknown) => {
        logger.warn('search index: cannot check it in a worker thread; checking it here', { org: orgId, error: String(err) });
        return checkFile(file);
      });
      if (sound) {
        logger.info('search index checked (not closed cleanly): sound', { org: orgId, ms: Date.now() - started });
      } else {
        logger.warn('search index damaged (not closed cleanly, check failed); rebuilding', { org: orgId });
        SearchDb.remove(file);
      }
      db = SearchDb.open(file, logger, pageCaches);
    }
    const index = new SearchIndex(db, args.source, args.readNeed, logger, orgId, args.progressEvery ?? PROGRESS_EVERY, args.metrics ?? silentMetrics, args.rankTuning);
    if (db.head !== args.source.headCommit || !db.closedCleanly) {
      if (args.inBackground) index.catchUpInBackground();
      else await index.catchUp();
    }
    return index;
  }

  /** Starts the in-memory ranking index's load if need be; resolves once it serves queries (tests and benches). */
  async rankLoaded(): Promise<void> {
    await this.copy.loaded();
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

  /** Nothing under way that a close would cut short: no catch-up, no staged transaction, no load of the ranking index. */
  get idle(): boolean {
    return this.catchingUp === null && !this.gate.closed && !this.copy.loading;
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
  async catchUp(): Promise<CaughtUp> {
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

  private async catchUpNow(): Promise<CaughtUp> {
    const failedBefore = this.failedBatches;
    const changed = await catchUpRows({ rows: this.rows, source: this.source, textOf: (e) => this.textOf(e), logger: this.logger, orgId: this.orgId, progressEvery: this.progressEvery });
    // A batch that failed while this ran may be in no row: stay stale, and the next query catches up again.
    this.stale = this.failedBatches !== failedBefore;
    return changed;
  }

  /**
   * Writes what a batch will publish while its ref update is fsynced, in a transaction left open (queries
   * wait) until the branch has moved (`commit`) or the write failed (`rollback`). Null, to follow
   * the batch in `published` instead, when it changes a folder rule, when the write failed before
   * its fsync, or when writing failed.
   */
  async stage(batch: StagingBatch): Promise<StagedView | null> {
    const { paths, rulesChanged } = changedPaths(batch);
    if (rulesChanged || this.catchingUp) return null;
    const updates = await updatesFor({ rows: this.rows, textOf: (e) => this.textOf(e), paths, state: batch.state, written: batch.written });
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
      this.rows.apply(updates, batch.head, batch.state);
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
      const updates = await updatesFor({ rows: this.rows, textOf: (e) => this.textOf(e), paths, state: this.source, written: batch.written });
      await this.gate.idle();
      this.db.transaction(() => {
        this.rows.apply(updates, batch.head, this.source);
        if (rulesChanged) this.rows.refreshNeeds();
      });
    } catch (err) {
      this.stale = true;
      this.failedBatches++;
      throw err;
    }
  }

  /** Rolls the open transaction back (the rows live in the file alone, so nothing else is undone). */
  private undo(): void {
    this.db.rollback();
  }

  /**
   * The best matches the caller may read (`needs`: the ranks it may read; `prefixes`: the folders
   * it may look in, absent for anywhere, empty for nowhere), from `offset` on. Both filter inside
   * the query, so what the caller may not read is never counted or paged over.
   * Work per query is bounded by the match itself: the caller bounds the terms.
   * `snippets`: how many hits, from the first, get a snippet (all by default); the others' is empty: a caller
   * that asks for one hit more than it shows, to know whether a next page exists, does not pay for its snippet.
   * `ms`: what the query itself took, its waits for a catch-up or a staged batch left out (what a key is charged).
   */
  async search(args: {
    terms: SearchTerms;
    needs: readonly number[];
    prefixes?: readonly string[];
    limit: number;
    offset: number;
    snippets?: number;
  }): Promise<{ hits: SearchHit[]; ms: number }> {
    if (args.prefixes?.length === 0) return { hits: [], ms: 0 };
    // The loop's last check and the reads below run with nothing awaited in between: no staged
    // transaction is open while the query reads.
    const started = process.hrtime.bigint();
    while (this.gate.closed || this.stale) {
      if (this.gate.closed) await this.gate.idle();
      else await this.catchUp();
    }
    // From here to the answer nothing is awaited: the time is the query's own.
    const working = process.hrtime.bigint();
    const query = { needs: args.needs, ranges: args.prefixes?.map(prefixRange), limit: args.limit, offset: args.offset };
    const snippets = args.snippets ?? args.limit;
    // Plain words go to the in-memory engine once it is loaded; phrases and prefixes stay with FTS5.
    const plain = this.copy.ready && this.useRank ? plainTerms(args.terms) : null;
    let rows: Array<{ path: string; score: number; snippet: string }>;
    if (plain) rows = plainSearch({ ...query, rank: this.copy.rank, plain, snippets, bodies: (ids) => this.db.bodies(ids), body: (id) => this.db.body(id) });
    else {
      const match = matchExpression(args.terms);
      rows = this.db.search({ ...query, match, pathMatch: pathMatchExpression(args.terms) }).map((row, i) => ({ ...row, snippet: i < snippets ? this.db.snippet(match, row.id) : '' }));
    }
    const hits = hitsOf(rows, this.source);
    const ms = Number(process.hrtime.bigint() - working) / 1e6;
    this.metrics.search({ seconds: secondsSince(started), querySeconds: ms / 1000 });
    return { hits, ms };
  }

  /** False: every query goes to FTS5 (the differential test and the bench's before figure switch it). */
  useRank = true;

  /** The paths where the index disagrees with the repository (for `verify`): none when it is in step. */
  differences(): string[] {
    // The in-memory copy against the file too, once loaded (while it loads, it lacks rows by design).
    return [...this.rows.differences(), ...this.copy.differences()];
  }

  close(): void {
    this.closed = true;
    this.db.close();
  }

  /** What is searched besides the path: the content, which for a file item is its extracted text (contract §7). */
  private async textOf(entry: IndexEntry): Promise<string> {
    return this.source.readContent(entry);
  }
}
