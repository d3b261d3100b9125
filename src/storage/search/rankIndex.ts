import { weightOf } from './bm25.js';
import { decodedTerm, grow, sizedDecoded } from './decodedTerm.js';
import { BLOCK_POSTINGS, PostingPool } from './postingPool.js';
import { TermCursor } from './termCursor.js';
import { buildTopDocs, type TopDocs } from './topDocs.js';
import { TopDocsCache } from './topDocsCache.js';
import { indexedText, tokenize } from './unicode61.js';

/** The read rank of a document that no longer exists (a replaced or removed item). */
export const DEAD = 255;

/**
 * Dead postings (of replaced or removed items) from which, and once they outnumber the live ones, every list is
 * written again without them: each update of a 2 KB item leaves ~200 behind (~500 bytes). 0.58 s of CPU at
 * 10 M postings (measured at load average 10), once per as many updates as there are items, after a commit (never inside a transaction, whose
 * rollback may still need a dead document back).
 */
const COMPACT_AT_POSTINGS = 1 << 20;
/**
 * A list with this many postings or more (~10 blocks) takes its next blocks RUN at a time, consecutive: a query
 * walking it reads memory in order (at most RUN - 1 blocks of 64 bytes unused per such list).
 */
const RUN_FROM = 256;
const RUN = 8;

type Undo = () => void;

/** Told of each transaction of the SQLite file, to keep a copy of its rows in step (SearchDb.follow). */
export interface TransactionFollower {
  begin(): void;
  commit(): void;
  rollback(): void;
}

/**
 * The in-memory twin of the FTS5 table `docs`: per term, the documents holding it (postingPool.ts), and
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

  /**
   * `compactAt`: the dead postings from which the lists are written again without them (by default
   * COMPACT_AT_POSTINGS or the live ones, whichever is more; tests lower it to reach it with small corpora);
   * `topFrom`, `topSize`: from which list length, and how many, top documents are kept (topDocsCache.ts).
   */
  constructor(tuning: { compactAt?: number; topFrom?: number; topSize?: number } = {}) {
    this.compactAt = tuning.compactAt;
    this.tops = new TopDocsCache(tuning);
  }

  private readonly tops: TopDocsCache;

  private pool = new PostingPool();
  private readonly terms = new Map<string, number>();
  /** Per term: its first block, and where its last posting ends; the last document it holds. */
  private head = new Int32Array(1024);
  private tail = new Float64Array(1024);
  private lastDoc = new Int32Array(1024);
  /** Postings written, dead ones included (the room a decode needs). */
  private postings = new Int32Array(1024);
  /** Live postings of the terms queried since the last change, counted when dead ones exist (`liveCount`). */
  private readonly liveCounts = new Map<number, number>();

  private paths: string[] = [];
  private needs = new Uint8Array(1024);
  private lengths = new Uint32Array(1024);
  private rowids = new Int32Array(1024);
  private postingCounts = new Uint32Array(1024);
  private readonly byPath = new Map<string, number>();
  private docs = 0;

  /** Live documents and their tokens, FTS5's row count and total size. */
  liveDocs = 0;
  liveTokens = 0;
  private livePostings = 0;
  private deadPostings = 0;

  private journal: Undo[] = [];
  private inTransaction = false;
  /** Room for one block's postings, where `liveCount` decodes them. */
  private readonly scratch = { docs: new Int32Array(BLOCK_POSTINGS), body: new Int32Array(BLOCK_POSTINGS), path: new Int32Array(BLOCK_POSTINGS) };

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
    for (const [term, count] of counts) this.append(term, doc, count % (1 << 20), Math.floor(count / (1 << 20)));
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

  /** The SQLite transaction committed: its changes stay. */
  commit(): void {
    this.journal = [];
    this.inTransaction = false;
    if (this.deadPostings >= (this.compactAt ?? Math.max(COMPACT_AT_POSTINGS, this.livePostings))) this.compact();
  }

  /** Writes every term's list again without its dead documents (their numbers stay; their paths are let go). */
  private compact(): void {
    const pool = new PostingPool();
    let list = decodedTerm();
    for (const id of this.terms.values()) {
      const all = this.postings[id] as number;
      if (all > list.docs.length) list = sizedDecoded(all);
      const n = this.pool.decode(this.head[id] as number, list.docs, list.body, list.path, this.needs, DEAD);
      const block = pool.allocate();
      let tail = PostingPool.start(block);
      let last = -1;
      for (let i = 0; i < n; i++) {
        const doc = list.docs[i] as number;
        const body = list.body[i] as number;
        const path = list.path[i] as number;
        tail = pool.append(tail, doc, doc - last, body, path, weightOf(body, path), this.lengths[doc] as number, n >= RUN_FROM ? RUN : 1);
        last = doc;
      }
      this.head[id] = block;
      this.tail[id] = tail;
      this.lastDoc[id] = last;
      this.postings[id] = n;
    }
    for (let doc = 0; doc < this.docs; doc++) if (this.needs[doc] === DEAD) this.paths[doc] = '';
    this.pool = pool;
    this.tops.clear();
    this.deadPostings = 0;
    this.changed();
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
    const id = this.terms.get(term);
    return id === undefined ? undefined : new TermCursor(this.pool, this.head[id] as number, this.needs, DEAD, avgdl);
  }

  /** The terms whose lists are long enough to keep top documents (the load makes them all: rankBuild.ts). */
  longTerms(): string[] {
    const out: string[] = [];
    for (const [term, id] of this.terms) if ((this.postings[id] as number) >= this.tops.from) out.push(term);
    return out;
  }

  /** The term's top documents (topDocs.ts), when its list is long enough; valid until the next change. */
  topDocs(term: string, avgdl: number): TopDocs | undefined {
    const id = this.terms.get(term);
    if (id === undefined) return undefined;
    const postings = this.postings[id] as number;
    return this.tops.get(id, postings, (size) => buildTopDocs(this.pool, this.head[id] as number, postings, this.lengths, this.needs, avgdl, size));
  }

  /**
   * How many live documents hold the term (FTS5's `n` of its IDF). Without dead postings, every posting is
   * live; with some, the list is counted once per change and the count kept until the next one.
   */
  liveCount(term: string): number {
    const id = this.terms.get(term);
    if (id === undefined) return 0;
    if (this.deadPostings === 0) return this.postings[id] as number;
    let n = this.liveCounts.get(id);
    if (n === undefined) {
      const { docs, body, path } = this.scratch;
      n = 0;
      for (let block = this.head[id] as number; block !== 0; block = this.pool.next(block)) n += this.pool.decodeBlock(block, docs, body, path, 0, this.needs, DEAD);
      this.liveCounts.set(id, n);
    }
    return n;
  }

  /** Any change to which documents hold a term, or live: every count in `liveCounts` may be out of date. */
  private changed(): void {
    if (this.liveCounts.size > 0) this.liveCounts.clear();
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
    return this.pool.bytes + this.tops.bytes + this.postings.byteLength + this.head.byteLength + this.tail.byteLength + this.lastDoc.byteLength + this.needs.byteLength + this.lengths.byteLength + this.rowids.byteLength + this.postingCounts.byteLength;
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

  private append(term: string, doc: number, body: number, path: number): void {
    this.changed();
    let id = this.terms.get(term);
    if (id === undefined) {
      id = this.terms.size;
      this.terms.set(term, id);
      if (id === this.head.length) {
        this.head = grow(this.head);
        this.tail = grow(this.tail);
        this.lastDoc = grow(this.lastDoc);
        this.postings = grow(this.postings);
      }
      const block = this.pool.allocate();
      this.head[id] = block;
      this.tail[id] = PostingPool.start(block);
      this.lastDoc[id] = -1;
    }
    const gap = doc - (this.lastDoc[id] as number);
    this.tail[id] = this.pool.append(this.tail[id] as number, doc, gap, body, path, weightOf(body, path), this.lengths[doc] as number, (this.postings[id] as number) >= RUN_FROM ? RUN : 1);
    this.lastDoc[id] = doc;
    this.postings[id] = (this.postings[id] as number) + 1;
  }

  private grow(doc: number): void {
    if (doc < this.needs.length) return;
    this.needs = grow(this.needs);
    this.lengths = grow(this.lengths);
    this.rowids = grow(this.rowids);
    this.postingCounts = grow(this.postingCounts);
  }
}
