import { weightOf } from './bm25.js';
import { decodedTerm, grow, sizedDecoded, type DecodedTerm } from './decodedTerm.js';
import { BLOCK_POSTINGS, PostingPool } from './postingPool.js';
import { TermCursor } from './termCursor.js';
import { buildTopDocs, type TopDocs } from './topDocs.js';
import { TopDocsCache } from './topDocsCache.js';

/** The read rank of a document that no longer exists (a replaced or removed item). */
export const DEAD = 255;

/**
 * A list with this many postings or more (~10 blocks) takes its next blocks RUN at a time, consecutive: a query
 * walking it reads memory in order (at most RUN - 1 blocks of 64 bytes unused per such list).
 */
const RUN_FROM = 256;
const RUN = 8;

/** What the lists read of RankIndex's documents, by number: read ranks (DEAD: gone) and token counts. */
export interface DocColumns {
  needs: Uint8Array;
  lengths: Uint32Array;
}

/** A compaction under way: terms below `at` have their lists in `next` already, the others still in the pool. */
interface Compaction {
  next: PostingPool;
  at: number;
  list: DecodedTerm;
}

/**
 * RankIndex's lists: per term, the documents holding it in a chain of blocks (postingPool.ts), where its last
 * posting ends, its top documents (topDocsCache.ts); and their compaction, a list at a time (`compactStep`).
 */
export class TermLists {
  private pool = new PostingPool();
  private readonly ids = new Map<string, number>();
  /**
   * Per term: its first block, and where its last posting ends; the last document it holds. The arrays double
   * as terms come, from a size a small organization's few terms fit (every organization searched keeps one).
   */
  private head = new Int32Array(64);
  private tail = new Float64Array(64);
  private lastDoc = new Int32Array(64);
  /** Postings written, dead ones included (the room a decode needs). */
  private postings = new Int32Array(64);
  /** Live postings of the terms queried since the last change, counted when dead ones exist (`liveCount`). */
  private readonly liveCounts = new Map<number, number>();
  /** Room for one block's postings, where `liveCount` decodes them. */
  private readonly scratch = { docs: new Int32Array(BLOCK_POSTINGS), body: new Int32Array(BLOCK_POSTINGS), path: new Int32Array(BLOCK_POSTINGS) };
  private readonly tops: TopDocsCache;
  private compaction: Compaction | null = null;
  /** Terms whose top documents a query found due, to be made by `makeDue`. */
  private readonly due = new Set<number>();

  /**
   * `schedule`: when given, a query that finds a list's top documents due takes what is held and the list joins
   * `due`; `schedule` is called when `due` stops being empty, to have `makeDue` run. Without it, the query makes them.
   */
  constructor(
    tuning: { topFrom?: number; topSize?: number },
    private readonly schedule?: () => void,
  ) {
    this.tops = new TopDocsCache(tuning);
  }

  /** Adds document `doc` (numbered after every document before it, of `length` tokens) to the term's list. */
  append(term: string, doc: number, body: number, path: number, length: number): void {
    this.changed();
    let id = this.ids.get(term);
    if (id === undefined) {
      id = this.ids.size;
      this.ids.set(term, id);
      if (id === this.head.length) {
        this.head = grow(this.head);
        this.tail = grow(this.tail);
        this.lastDoc = grow(this.lastDoc);
        this.postings = grow(this.postings);
      }
      // A new term's id is past any compaction's `at`: its list starts in the pool the others not moved yet are in.
      const block = this.pool.allocate();
      this.head[id] = block;
      this.tail[id] = PostingPool.start(block);
      this.lastDoc[id] = -1;
    }
    const gap = doc - (this.lastDoc[id] as number);
    this.tail[id] = this.poolOf(id).append(this.tail[id] as number, doc, gap, body, path, weightOf(body, path), length, (this.postings[id] as number) >= RUN_FROM ? RUN : 1);
    this.lastDoc[id] = doc;
    this.postings[id] = (this.postings[id] as number) + 1;
  }

  /** A cursor over the term's postings (undefined when no document ever held it); valid until the next change. */
  cursor(term: string, needs: Uint8Array, avgdl: number): TermCursor | undefined {
    const id = this.ids.get(term);
    return id === undefined ? undefined : new TermCursor(this.poolOf(id), this.head[id] as number, needs, DEAD, avgdl);
  }

  /** The terms whose lists are long enough to keep top documents. */
  longTerms(): string[] {
    const out: string[] = [];
    for (const [term, id] of this.ids) if ((this.postings[id] as number) >= this.tops.from) out.push(term);
    return out;
  }

  /**
   * The term's top documents (topDocs.ts), when its list is long enough; valid until the next change. Due ones are
   * made now when `now` is true or nothing was scheduled, else after (the constructor's `schedule`).
   */
  topDocs(term: string, docs: DocColumns, avgdl: number, now = false): TopDocs | undefined {
    const id = this.ids.get(term);
    return id === undefined ? undefined : this.topDocsOf(id, docs, avgdl, now);
  }

  private topDocsOf(id: number, docs: DocColumns, avgdl: number, now = false): TopDocs | undefined {
    const postings = this.postings[id] as number;
    const later = now || !this.schedule ? undefined : () => this.makeLater(id);
    return this.tops.get(id, postings, (size) => buildTopDocs(this.poolOf(id), this.head[id] as number, postings, docs.lengths, docs.needs, avgdl, size), later);
  }

  private makeLater(id: number): void {
    const idle = this.due.size === 0;
    this.due.add(id);
    if (idle) this.schedule?.();
  }

  /** Makes the top documents queries found due, a list at a time until `until()` says stop; true once none is left. */
  makeDue(until: () => boolean, docs: DocColumns, avgdl: number | null): boolean {
    for (const id of this.due) {
      this.due.delete(id);
      if (avgdl !== null) this.topDocsOf(id, docs, avgdl, true);
      if (this.due.size > 0 && until()) return false;
    }
    return true;
  }

  /** How many live documents hold the term; with `anyDead` false, all its postings are live and nothing is decoded. */
  liveCount(term: string, needs: Uint8Array, anyDead: boolean): number {
    const id = this.ids.get(term);
    if (id === undefined) return 0;
    if (!anyDead) return this.postings[id] as number;
    let n = this.liveCounts.get(id);
    if (n === undefined) {
      const { docs, body, path } = this.scratch;
      n = 0;
      const pool = this.poolOf(id);
      for (let block = this.head[id] as number; block !== 0; block = pool.next(block)) n += pool.decodeBlock(block, docs, body, path, 0, needs, DEAD);
      this.liveCounts.set(id, n);
    }
    return n;
  }

  /** Any change to which documents hold a term, or live: every count in `liveCounts` may be out of date. */
  changed(): void {
    if (this.liveCounts.size > 0) this.liveCounts.clear();
  }

  get compacting(): boolean {
    return this.compaction !== null;
  }

  startCompaction(): void {
    this.compaction ??= { next: new PostingPool(), at: 0, list: decodedTerm() };
  }

  /**
   * Moves lists, term after term, into the compaction's new pool without their dead documents, until `until()`
   * says stop (at least one list a call) or every list is there, when the new pool takes the old one's place.
   * Queries between calls read each list where it is (`poolOf`), writes append to it there. A moved list's top
   * documents are made again at once (with `avgdl`; none when null), not by the next query that needs them.
   * Returns whether it is done, and how many dead postings it dropped.
   */
  compactStep(until: () => boolean, docs: DocColumns, avgdl: number | null): { done: boolean; dropped: number } {
    const c = this.compaction;
    let dropped = 0;
    if (!c) return { done: true, dropped };
    while (c.at < this.ids.size) {
      // Counted as moved first: from here on its list is read (its top documents made again) in the new pool.
      dropped += this.moveList(c, c.at++, docs, avgdl);
      if (c.at < this.ids.size && until()) return { done: false, dropped };
    }
    this.pool = c.next;
    this.compaction = null;
    this.changed();
    return { done: true, dropped };
  }

  /** Term `id`'s live postings written again from the old pool into the compaction's; the dead ones it dropped. */
  private moveList(c: Compaction, id: number, docs: DocColumns, avgdl: number | null): number {
    const all = this.postings[id] as number;
    if (all > c.list.docs.length) c.list = sizedDecoded(all);
    const { docs: numbers, body, path } = c.list;
    const n = this.pool.decode(this.head[id] as number, numbers, body, path, docs.needs, DEAD);
    const block = c.next.allocate();
    let tail = PostingPool.start(block);
    let last = -1;
    for (let i = 0; i < n; i++) {
      const doc = numbers[i] as number;
      tail = c.next.append(tail, doc, doc - last, body[i] as number, path[i] as number, weightOf(body[i] as number, path[i] as number), docs.lengths[doc] as number, n >= RUN_FROM ? RUN : 1);
      last = doc;
    }
    this.head[id] = block;
    this.tail[id] = tail;
    this.lastDoc[id] = last;
    this.postings[id] = n;
    // Its top documents named blocks of the old pool.
    this.tops.drop(id);
    if (n >= this.tops.from && avgdl !== null) this.topDocsOf(id, docs, avgdl, true);
    return all - n;
  }

  /** The pool that holds term `id`'s list: the compaction's new one once the list was moved there. */
  private poolOf(id: number): PostingPool {
    const c = this.compaction;
    return c !== null && id < c.at ? c.next : this.pool;
  }

  /** Bytes of the typed arrays: the pools, top documents and per-term arrays. */
  get bytes(): number {
    return this.pool.bytes + (this.compaction?.next.bytes ?? 0) + this.tops.bytes + this.postings.byteLength + this.head.byteLength + this.tail.byteLength + this.lastDoc.byteLength;
  }
}
