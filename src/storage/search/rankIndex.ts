import { grow } from './decodedTerm.js';
import type { TermCursor } from './termCursor.js';
import { DEAD, TermLists, type DocColumns } from './termLists.js';
import type { TopDocs } from './topDocs.js';
import { indexedText, tokenize } from './unicode61.js';

/**
 * Dead postings (of replaced or removed items) from which, and once they outnumber the live ones, every list is
 * written again without them: each update of a 2 KB item leaves ~200 behind (~500 bytes). 1.3–2.1 s of CPU at
 * 10 M postings (50,000 items of 2 KB), once per as many updates as there are items: done in steps (`compactStep`),
 * between transactions (a rollback may still need a dead document back), never in one piece.
 */
const COMPACT_AT_POSTINGS = 1 << 20;

type Undo = () => void;

/**
 * Runs `step` until it returns true (done): `until` tells it when to stop for now. `what` says which work it is: a
 * compaction, or top documents that queries found due. SearchIndex runs them in slices between which the server
 * serves (rankCopy.ts); without a runner, a compaction runs at once, to the end, and queries make top documents.
 */
export type SliceRunner = (step: SliceStep, what: SliceWork) => void;

/** Work done in steps: it stops when `until()` says so, and returns true once all of it is done. */
export type SliceStep = (until: () => boolean) => boolean;
export type SliceWork = 'compaction' | 'top documents';

/** Told of each transaction of the SQLite file, to keep a copy of its rows in step (SearchDb.follow). */
export interface TransactionFollower {
  begin(): void;
  commit(): void;
  rollback(): void;
}

/**
 * The in-memory twin of the FTS5 table `docs`: per term, the documents holding it (termLists.ts), and
 * per document its path, read rank, token count and FTS5 rowid, so that the common queries (plain words)
 * are ranked here exactly as `bm25(docs, 10.0, 1.0)` ranks them (rankQuery.ts), without SQLite.
 *
 * Documents are numbered in the order they are written, never reused: a changed item is a new document
 * and the old one is marked DEAD, so every list only ever grows at its end and stays sorted. Dead
 * postings are skipped when a list is read (and counted as garbage, for `garbageShare`).
 *
 * Every change is journalled while a transaction of the SQLite file is open and undone with it (`rollback`),
 * so the two always hold the same rows; `commit` forgets the journal.
 */
export class RankIndex implements TransactionFollower {
  private readonly compactAt: number | undefined;
  private readonly runCompaction: (step: SliceStep) => void;
  private readonly lists: TermLists;

  /**
   * `compactAt`: the dead postings from which the lists are written again without them (by default
   * COMPACT_AT_POSTINGS or the live ones, whichever is more; tests lower it to reach it with small corpora);
   * `topFrom`, `topSize`: from which list length, and how many, top documents are kept (topDocsCache.ts);
   * `slices`: what runs a compaction's steps, and makes the top documents queries found due (see SliceRunner).
   */
  constructor(tuning: { compactAt?: number; topFrom?: number; topSize?: number; slices?: SliceRunner } = {}) {
    const run = tuning.slices;
    this.compactAt = tuning.compactAt;
    this.lists = new TermLists(tuning, run ? () => run((until) => this.lists.makeDue(until, this.columns(), this.avgdl()), 'top documents') : undefined);
    this.runCompaction = run ? (step) => run(step, 'compaction') : (step) => void step(() => false);
  }

  private paths: string[] = [];
  // Per document; doubled as documents come, from a size that fits a small organization (see TermLists).
  private needs = new Uint8Array(64);
  private lengths = new Uint32Array(64);
  private rowids = new Int32Array(64);
  private postingCounts = new Uint32Array(64);
  private readonly byPath = new Map<string, number>();
  private docs = 0;

  /** Live documents and their tokens, FTS5's row count and total size. */
  liveDocs = 0;
  liveTokens = 0;
  private livePostings = 0;
  private deadPostings = 0;

  private journal: Undo[] = [];
  private inTransaction = false;

  /** Adds or replaces the document of `path`. */
  put(args: { path: string; text: string; need: number; rowid: number }): void {
    this.remove(args.path);
    const doc = this.docs++;
    this.grow(doc);
    const counts = new Map<string, number>();
    // Path tokens count 1 << 20 each, body tokens 1: one number carries both counts.
    const pathTokens = tokenize(indexedText(args.path), (term) => counts.set(term, (counts.get(term) ?? 0) + (1 << 20)));
    const bodyTokens = tokenize(indexedText(args.text), (term) => counts.set(term, (counts.get(term) ?? 0) + 1));
    // The length first: the blocks' bounds take it from there.
    this.lengths[doc] = pathTokens + bodyTokens;
    for (const [term, count] of counts) this.lists.append(term, doc, count % (1 << 20), Math.floor(count / (1 << 20)), this.lengths[doc] as number);
    this.paths[doc] = args.path;
    this.needs[doc] = args.need;
    this.rowids[doc] = args.rowid;
    this.postingCounts[doc] = counts.size;
    this.deadPostings += counts.size;
    this.revive(doc, args.need);
    this.record(() => this.kill(doc));
  }

  /** Removes the document of `path`, if there is one. */
  remove(path: string): void {
    const doc = this.byPath.get(path);
    if (doc === undefined) return;
    const need = this.needs[doc] as number;
    this.kill(doc);
    this.record(() => this.revive(doc, need));
  }

  setNeed(path: string, need: number): void {
    const doc = this.byPath.get(path);
    if (doc === undefined) return;
    const before = this.needs[doc] as number;
    this.needs[doc] = need;
    this.record(() => (this.needs[doc] = before));
  }

  has(path: string): boolean {
    return this.byPath.has(path);
  }

  /** Where this copy disagrees with the file's rows (for `verify`): a row missing or extra, another rowid or read rank. */
  differencesFrom(rows: ReadonlyMap<string, { id: number; need: number }>): string[] {
    const problems: string[] = [];
    for (const [path, row] of rows) {
      const doc = this.byPath.get(path);
      if (doc === undefined) problems.push(`search ranking index: ${path} is missing`);
      else if (this.rowids[doc] !== row.id || this.needs[doc] !== row.need) problems.push(`search ranking index: ${path} differs from the file`);
    }
    for (const path of this.byPath.keys()) if (!rows.has(path)) problems.push(`search ranking index: ${path} is not in the file`);
    return problems;
  }

  /** A SQLite transaction began: changes are journalled until it ends. */
  begin(): void {
    this.journal = [];
    this.inTransaction = true;
  }

  /** The SQLite transaction committed: its changes stay. Enough dead postings start a compaction (`compactStep`). */
  commit(): void {
    this.journal = [];
    this.inTransaction = false;
    if (this.lists.compacting || this.deadPostings < (this.compactAt ?? Math.max(COMPACT_AT_POSTINGS, this.livePostings))) return;
    this.lists.startCompaction();
    this.runCompaction((until) => this.compactStep(until));
  }

  /** Whether a compaction is under way (tests). */
  get compacting(): boolean {
    return this.lists.compacting;
  }

  /**
   * Part of the compaction under way: lists written again without their dead documents (TermLists.compactStep),
   * until `until()` says stop or all are; then dead documents' paths are let go (their numbers stay). True once
   * done. Nothing is done while a transaction is open: its rollback may need a dead document back, postings included.
   */
  compactStep(until: () => boolean): boolean {
    if (!this.lists.compacting) return true;
    if (this.inTransaction) return false;
    const { done, dropped } = this.lists.compactStep(until, this.columns(), this.avgdl());
    this.deadPostings -= dropped;
    if (!done) return false;
    for (let doc = 0; doc < this.docs; doc++) if (this.needs[doc] === DEAD) this.paths[doc] = '';
    this.changed();
    return true;
  }

  /** The SQLite transaction rolled back: so are its changes here, newest first. */
  rollback(): void {
    for (let i = this.journal.length - 1; i >= 0; i--) (this.journal[i] as Undo)();
    this.journal = [];
    this.inTransaction = false;
  }

  private record(undo: Undo): void {
    if (this.inTransaction) this.journal.push(undo);
  }

  /**
   * A cursor over the term's postings for one query (undefined when no document ever held it); `avgdl` is
   * the query's, for the blocks' bounds. Valid until the next change.
   */
  cursor(term: string, avgdl: number): TermCursor | undefined {
    return this.lists.cursor(term, this.needs, avgdl);
  }

  /** The terms whose lists are long enough to keep top documents (the load makes them all: rankBuild.ts). */
  longTerms(): string[] {
    return this.lists.longTerms();
  }

  /**
   * The term's top documents (topDocs.ts), when its list is long enough; valid until the next change. With a
   * SliceRunner, due ones are made after the query (it takes what is held meanwhile), not by it.
   */
  topDocs(term: string, avgdl: number): TopDocs | undefined {
    return this.lists.topDocs(term, this.columns(), avgdl);
  }

  /** Makes the term's top documents now if they are due (the load makes every long list's: rankBuild.ts). */
  makeTopDocs(term: string): void {
    const avgdl = this.avgdl();
    if (avgdl !== null) this.lists.topDocs(term, this.columns(), avgdl, true);
  }

  /** What the lists read of the documents (the arrays as they are now: they are replaced as they grow). */
  private columns(): DocColumns {
    return { needs: this.needs, lengths: this.lengths };
  }

  /** FTS5's avgdl over the live documents; null when there are none. */
  private avgdl(): number | null {
    return this.liveDocs > 0 ? this.liveTokens / this.liveDocs : null;
  }

  /**
   * How many live documents hold the term (FTS5's `n` of its IDF). Without dead postings, every posting is
   * live; with some, the list is counted once per change and the count kept until the next one.
   */
  liveCount(term: string): number {
    return this.lists.liveCount(term, this.needs, this.deadPostings > 0);
  }

  /** Any change to which documents hold a term, or live: every count the lists keep may be out of date. */
  private changed(): void {
    this.lists.changed();
  }

  path(doc: number): string {
    return this.paths[doc] as string;
  }

  need(doc: number): number {
    return this.needs[doc] as number;
  }

  length(doc: number): number {
    return this.lengths[doc] as number;
  }

  rowid(doc: number): number {
    return this.rowids[doc] as number;
  }

  /** Share of the postings that belong to dead documents (memory a rebuild would give back). */
  get garbageShare(): number {
    const all = this.livePostings + this.deadPostings;
    return all === 0 ? 0 : this.deadPostings / all;
  }

  /** Bytes of the typed arrays (the pool and the per-term and per-document arrays); strings and maps not counted. */
  get bytes(): number {
    return this.lists.bytes + this.needs.byteLength + this.lengths.byteLength + this.rowids.byteLength + this.postingCounts.byteLength;
  }

  private kill(doc: number): void {
    this.changed();
    this.byPath.delete(this.paths[doc] as string);
    this.needs[doc] = DEAD;
    this.liveDocs--;
    this.liveTokens -= this.lengths[doc] as number;
    this.livePostings -= this.postingCounts[doc] as number;
    this.deadPostings += this.postingCounts[doc] as number;
  }

  /** Makes a dead document live (a new one is written dead, then revived). */
  private revive(doc: number, need: number): void {
    this.changed();
    this.byPath.set(this.paths[doc] as string, doc);
    this.needs[doc] = need;
    this.liveDocs++;
    this.liveTokens += this.lengths[doc] as number;
    this.livePostings += this.postingCounts[doc] as number;
    this.deadPostings -= this.postingCounts[doc] as number;
  }

  private grow(doc: number): void {
    if (doc < this.needs.length) return;
    this.needs = grow(this.needs);
    this.lengths = grow(this.lengths);
    this.rowids = grow(this.rowids);
    this.postingCounts = grow(this.postingCounts);
  }
}
