import { termBound } from './bm25.js';
import { BLOCK_POSTINGS, HAS_PATH, META_BOUNDS, META_FIRST, META_NEXT, metaSlot, PAGE_SHIFT, RATIO_SCALE, WEIGHT_SATURATED, type PostingPool } from './postingPool.js';

/** No document: past the end of a list. */
export const END = 0x7fffffff;

/**
 * One term's postings read block by block for a query (rankQuery.ts): `shallow` moves to the block that may
 * hold a document without decoding anything, so a query can judge the block by its bound (`bound`, `hasPath`)
 * and skip it; `seek` decodes what it lands on. Both only move forward, as a query's documents do.
 */
export class TermCursor {
  private block: number;
  /** The first document of the next block (END: this is the last). */
  private nextFirst: number;
  private decoded = false;
  private readonly docs = new Int32Array(BLOCK_POSTINGS);
  private readonly bodies = new Int32Array(BLOCK_POSTINGS);
  private readonly paths = new Int32Array(BLOCK_POSTINGS);
  private n = 0;
  private i = 0;
  private boundOf = 0;
  private boundValue = 0;
  /** With top documents (`cover`): the share bound of the other documents below `horizon`, and where the rest starts. */
  private outside = Infinity;
  private horizon = -1;
  private resume = 0;
  /** The pool's links and bounds per page (nothing is written while a query reads), the current block's page and slot. */
  private readonly metas: Int32Array[];
  private meta: Int32Array;
  private slot: number;

  constructor(
    private readonly pool: PostingPool,
    head: number,
    private readonly needs: Uint8Array,
    private readonly dead: number,
    private readonly avgdl: number,
  ) {
    this.metas = pool.metas;
    this.block = head;
    this.meta = this.metas[head >>> PAGE_SHIFT] as Int32Array;
    this.slot = metaSlot(head);
    this.nextFirst = this.firstAfter();
  }

  /** The last document the current block may hold. */
  get blockEnd(): number {
    return this.nextFirst - 1;
  }

  /**
   * At least the term's share of the score (IDF left out) of any document of the current block, but its top
   * documents (`cover`): a query scores those apart, before it walks.
   */
  get bound(): number {
    if (this.boundOf !== this.block) {
      this.boundOf = this.block;
      const bounds = this.meta[this.slot + META_BOUNDS] as number;
      const block = termBound(bounds & WEIGHT_SATURATED, WEIGHT_SATURATED, (bounds >>> 16) / RATIO_SCALE, this.avgdl);
      this.boundValue = this.nextFirst <= this.horizon && this.outside < block ? this.outside : block;
    }
    return this.boundValue;
  }

  /** Whether a document of the current block may have the term in its path (top documents left out, as by `bound`). */
  get hasPath(): boolean {
    return this.nextFirst > this.horizon && ((this.meta[this.slot + META_BOUNDS] as number) & HAS_PATH) !== 0;
  }

  /**
   * From now on, the documents below `horizon` but the top ones are bounded by `outside` (topDocs.ts): the
   * cursor must not have moved yet.
   */
  cover(top: { horizon: number; resume: number }, outside: number): void {
    this.horizon = top.horizon;
    this.resume = top.resume;
    this.outside = outside;
    this.boundOf = -1;
  }

  /** When `doc` is past the covered documents, moves to the first block after them, unless it is there already (decoding nothing). */
  skipCovered(doc: number): void {
    if (doc >= this.horizon && this.nextFirst <= this.horizon) this.moveTo(this.resume);
  }

  /** Moves to the block that may hold `doc` (the last whose first document is at most `doc`), decoding nothing. */
  shallow(doc: number): void {
    while (this.nextFirst <= doc) this.advance();
  }

  /** The first live document at or after `doc` (END: none); the cursor stays on it (`body`, `path`). */
  seek(doc: number): number {
    this.shallow(doc);
    for (;;) {
      if (!this.decoded) {
        this.n = this.pool.decodeBlock(this.block, this.docs, this.bodies, this.paths, 0, this.needs, this.dead);
        this.i = 0;
        this.decoded = true;
      }
      const docs = this.docs;
      while (this.i < this.n && (docs[this.i] as number) < doc) this.i++;
      if (this.i < this.n) return docs[this.i] as number;
      if (this.nextFirst === END) return END;
      this.advance();
    }
  }

  /**
   * Whether the list holds `doc` (live), for `body` and `path`; as `seek`, but decoding its block only up to
   * it when no `seek` has (the next `seek` decodes the block again, whole).
   */
  lookup(doc: number, skips?: Int32Array): boolean {
    if (skips && doc >= this.nextFirst) this.skip(skips, doc);
    this.shallow(doc);
    if (this.decoded) return this.seek(doc) === doc;
    const n = this.pool.decodeBlock(this.block, this.docs, this.bodies, this.paths, 0, this.needs, this.dead, doc);
    this.i = n - 1;
    return n > 0 && this.docs[n - 1] === doc;
  }

  /** The term's count in the body of the document `seek` found. */
  body(): number {
    return this.bodies[this.i] as number;
  }

  /** The term's count in the path of the document `seek` found. */
  path(): number {
    return this.paths[this.i] as number;
  }

  /** Jumps to the last of `skips` (first document, block: pairs, in order) that starts at or before `doc`, if it is ahead. */
  private skip(skips: Int32Array, doc: number): void {
    let lo = 0;
    let hi = (skips.length >> 1) - 1;
    if (hi < 0 || (skips[0] as number) > doc) return;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((skips[mid * 2] as number) <= doc) lo = mid;
      else hi = mid - 1;
    }
    if ((skips[lo * 2] as number) >= this.nextFirst) this.moveTo(skips[lo * 2 + 1] as number);
  }

  private advance(): void {
    this.moveTo(this.meta[this.slot + META_NEXT] as number);
  }

  private moveTo(block: number): void {
    this.block = block;
    this.meta = this.metas[block >>> PAGE_SHIFT] as Int32Array;
    this.slot = metaSlot(block);
    this.nextFirst = this.firstAfter();
    this.decoded = false;
  }

  /** The first document of the block after the current one (END: none). */
  private firstAfter(): number {
    const next = this.meta[this.slot + META_NEXT] as number;
    return next === 0 ? END : ((this.metas[next >>> PAGE_SHIFT] as Int32Array)[metaSlot(next) + META_FIRST] as number);
  }
}
