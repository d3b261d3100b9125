/**
 * The postings of the in-memory ranking index (rankIndex.ts): for each term, the documents holding it
 * in increasing order, each with how often the term is in its path and in its body. Kept compact, as
 * bytes: a posting is three varints (the gap from the term's previous document, body count × 2 + 1 when
 * the path has the term too, then the path count if so), about 2-3 bytes where an object would cost 50.
 *
 * A term's postings are a chain of fixed 64-byte blocks in pages of 1 MiB: no copying as a list grows,
 * and a rare term (most terms) costs one block. A block's data starts after 4 bytes it does not use (a tail
 * position at a block's offset 0 would read as the end of the block before) and ends at the block's end or at a
 * 0 byte (no posting starts with one: a gap is at least 1).
 *
 * Beside each block, 12 bytes (`meta`): the next block of its list, and what lets a query skip it without
 * decoding it (block-max, rankQuery.ts): its first
 * document (so a block decodes on its own: its first gap is not needed), the largest weighted count of the term
 * in one of its documents and whether one has it in its path, and the smallest ratio of a document's tokens to
 * the term's weighted count in it (BM25 grows with the count and shrinks with that ratio: bm25.termBound). A
 * block's bounds cover its dead documents too: a bound only has to be high enough, never exact.
 */

const BLOCK = 64;
const BLOCK_SHIFT = 6;
export const PAGE_SHIFT = 14;
const PAGE_BLOCKS = 1 << PAGE_SHIFT;
const HEADER = 4;
/**
 * Blocks the first page starts with (16 KiB): an organization of a few items holds a few KiB, where a whole page
 * (1 MiB of blocks and 192 KiB of links and bounds, the latter all written) cost each organization searched
 * ~280 KiB of RSS. The first page doubles up to a whole one; the pages after it come whole.
 */
const FIRST_PAGE_BLOCKS = 256;
/** The most bytes one posting takes (three 5-byte varints). */
const MAX_POSTING = 15;
/** The most postings one block holds (60 bytes of data, at least 2 bytes a posting). */
export const BLOCK_POSTINGS = 30;
/** A block's largest weight is kept in 15 bits: this value means "this or more" (no bound but the formula's own). */
export const WEIGHT_SATURATED = 0x7fff;
export const HAS_PATH = 0x8000;
/** Ratios of tokens to weight are kept in 16 bits as sixteenths, rounded down and saturated: still lower bounds. */
export const RATIO_SCALE = 16;
const RATIO_SATURATED = 0xffff;

/**
 * Per block, in `PostingPool.metas[block >>> PAGE_SHIFT]` at `metaSlot(block)`: the next block of its list (0:
 * none), its first document, and its bounds: its largest weight (| HAS_PATH) in the low 16 bits, its smallest
 * ratio of tokens to weight (RATIO_SCALEths) in the high 16. A block's three side by side: a query walks a list's
 * blocks, which lie anywhere in the pool, and reads all three of each (one cache line, not three). One array per
 * page of blocks, allocated with it: never copied as the pool grows (a doubled array left its old copies in the RSS),
 * but for the first page while it is smaller than a whole one (FIRST_PAGE_BLOCKS).
 */
export const META_STRIDE = 3;
export const META_NEXT = 0;
export const META_FIRST = 1;
export const META_BOUNDS = 2;
/** The link of a block kept for a list's run and not used yet. */
const RESERVED = -1;
/** A new block's bounds: no weight yet, the largest ratio. */
const EMPTY_BOUNDS = RATIO_SATURATED << 16;

export class PostingPool {
  private pages: Uint8Array[] = [];
  /** Blocks handed out; block 0 is never used, so 0 means "none". */
  private blocks = 1;
  private readonly scratch = new Uint8Array(MAX_POSTING);
  /** The blocks' links and bounds, per page (see META_STRIDE). */
  readonly metas: Int32Array[] = [];

  /** Bytes held (the pages and the blocks' links and bounds). */
  get bytes(): number {
    let held = 0;
    for (let p = 0; p < this.pages.length; p++) held += (this.pages[p] as Uint8Array).byteLength + (this.metas[p] as Int32Array).byteLength;
    return held;
  }

  /**
   * A new, empty block's number; with `run` > 1, the blocks after it are kept for the same list (RESERVED), so
   * that a long list lies in runs of consecutive blocks (a query reads them in the order they lie in memory).
   */
  allocate(run = 1): number {
    const id = this.blocks;
    this.blocks += run;
    this.makeRoom(this.blocks - 1);
    for (let b = id + 1; b < id + run; b++) this.setMeta(b, META_NEXT, RESERVED);
    return id;
  }

  /**
   * Pages up to the one `last` is in. The first grows by doubling (its blocks and metas copied: a few KiB while
   * small, 1.2 MiB once at most) and is whole before a second comes; the others are allocated whole, never copied.
   * Readers look a block's page up at each use (a cursor lives within one query, and no block is handed out
   * during a query), so the first page's arrays may be replaced.
   */
  private makeRoom(last: number): void {
    const page = last >>> PAGE_SHIFT;
    const first = this.pages[0];
    const firstBlocks = first ? first.length / BLOCK : 0;
    if (firstBlocks < PAGE_BLOCKS && (page > 0 || last >= firstBlocks)) {
      let size = Math.max(FIRST_PAGE_BLOCKS, firstBlocks * 2);
      while (page === 0 && size <= last) size *= 2;
      size = page > 0 ? PAGE_BLOCKS : Math.min(size, PAGE_BLOCKS);
      const data = new Uint8Array(size * BLOCK);
      const meta = emptyMeta(size);
      if (first) {
        data.set(first);
        meta.set(this.metas[0] as Int32Array);
      }
      this.pages[0] = data;
      this.metas[0] = meta;
    }
    while (page >= this.pages.length) {
      this.pages.push(new Uint8Array(PAGE_BLOCKS * BLOCK));
      this.metas.push(emptyMeta(PAGE_BLOCKS));
    }
  }

  /** The block after `block` in its list (0: none). */
  next(block: number): number {
    return this.getMeta(block, META_NEXT);
  }

  /**
   * Appends a posting of `doc` after `at` (the tail block's number × 64 + the offset written up to);
   * returns the new tail position (another block when the posting did not fit: the next one kept for the list,
   * or `run` new ones). `weight` (the term's weighted count in the document) and `length` (its tokens) go into
   * the block's bounds.
   */
  append(at: number, doc: number, gap: number, body: number, path: number, weight: number, length: number, run = 1): number {
    let n = varint(this.scratch, 0, gap);
    n = varint(this.scratch, n, path > 0 ? body * 2 + 1 : body * 2);
    if (path > 0) n = varint(this.scratch, n, path);
    // A full block ends at offset 64, which is the next block's 0: the position names the byte before it.
    let block = Math.floor((at - 1) / BLOCK);
    let offset = at - block * BLOCK;
    if (offset + n > BLOCK) {
      // A block kept for this list follows it (a run's blocks are handed out in order, and only to its list).
      const kept = block + 1 < this.blocks && this.getMeta(block + 1, META_NEXT) === RESERVED;
      const next = kept ? block + 1 : this.allocate(run);
      if (kept) this.setMeta(next, META_NEXT, 0);
      this.setMeta(block, META_NEXT, next);
      block = next;
      offset = HEADER;
    }
    const page = this.pages[block >>> 14] as Uint8Array;
    page.set(this.scratch.subarray(0, n), ((block & (PAGE_BLOCKS - 1)) << BLOCK_SHIFT) + offset);
    if (offset === HEADER) this.setMeta(block, META_FIRST, doc);
    const held = this.getMeta(block, META_BOUNDS);
    const most = Math.max(held & WEIGHT_SATURATED, Math.min(weight, WEIGHT_SATURATED)) | (held & HAS_PATH) | (path > 0 ? HAS_PATH : 0);
    const least = Math.min(held >>> 16, Math.floor((length * RATIO_SCALE) / weight));
    this.setMeta(block, META_BOUNDS, most | (least << 16));
    return block * BLOCK + offset + n;
  }

  private getMeta(block: number, field: number): number {
    return (this.metas[block >>> PAGE_SHIFT] as Int32Array)[metaSlot(block) + field] as number;
  }

  private setMeta(block: number, field: number, value: number): void {
    (this.metas[block >>> PAGE_SHIFT] as Int32Array)[metaSlot(block) + field] = value;
  }

  /** Where a new list's first block starts writing. */
  static start(block: number): number {
    return block * BLOCK + HEADER;
  }

  /**
   * Decodes the whole list starting at `block` into the arrays (room for every posting, dead ones included,
   * is the caller's), skipping documents whose `needs` entry is `dead`; returns how many it wrote.
   */
  decode(block: number, docs: Int32Array, bodies: Int32Array, paths: Int32Array, needs: Uint8Array, dead: number): number {
    let n = 0;
    for (; block !== 0; block = this.next(block)) n = this.decodeBlock(block, docs, bodies, paths, n, needs, dead);
    return n;
  }

  /**
   * Decodes one block into the arrays from position `at` on (room for BLOCK_POSTINGS more is the caller's),
   * skipping documents whose `needs` entry is `dead`; returns the position after the last one written.
   * Documents come out in increasing order. One tight loop (no callback per posting): this is most of a
   * query's time. With `until`, it stops after the first document at or past it (a lookup of one document).
   */
  decodeBlock(block: number, docs: Int32Array, bodies: Int32Array, paths: Int32Array, at: number, needs: Uint8Array, dead: number, until = 0x7fffffff): number {
    let n = at;
    const page = this.pages[block >>> 14] as Uint8Array;
    const base = (block & (PAGE_BLOCKS - 1)) << BLOCK_SHIFT;
    const end = base + BLOCK;
    let i = base + HEADER;
    // The block's first gap is replaced by its first document: a block decodes without the ones before it.
    let doc = this.getMeta(block, META_FIRST);
    let firstGap = true;
    while (i < end) {
      let b = page[i] as number;
      if (b === 0) break;
      // Varints of up to four bytes (28 bits) are read with integer operations; longer ones do not occur
      // below 2^28 documents or tokens of one term in one document. The three reads are written out, not
      // a helper: a varint reader returns a value and a position, and this loop is most of a query's time.
      let v = b & 0x7f;
      let shift = 7;
      i++;
      while (b & 0x80) {
        b = page[i++] as number;
        v |= (b & 0x7f) << shift;
        shift += 7;
      }
      if (firstGap) firstGap = false;
      else doc += v;
      b = page[i++] as number;
      v = b & 0x7f;
      shift = 7;
      while (b & 0x80) {
        b = page[i++] as number;
        v |= (b & 0x7f) << shift;
        shift += 7;
      }
      let path = 0;
      if (v & 1) {
        b = page[i++] as number;
        path = b & 0x7f;
        shift = 7;
        while (b & 0x80) {
          b = page[i++] as number;
          path |= (b & 0x7f) << shift;
          shift += 7;
        }
      }
      if (needs[doc] === dead) continue;
      docs[n] = doc;
      bodies[n] = v >>> 1;
      paths[n] = path;
      n++;
      // A lookup (a dead document at `until` lets it decode on: the last one written is then past it).
      if (doc >= until) break;
    }
    return n;
  }
}

/** Where a block's links and bounds start in its page's array. */
export function metaSlot(block: number): number {
  return (block & (PAGE_BLOCKS - 1)) * META_STRIDE;
}

/** The links and bounds of a page of `blocks` blocks, each block's bounds empty. */
function emptyMeta(blocks: number): Int32Array {
  const meta = new Int32Array(blocks * META_STRIDE);
  for (let at = META_BOUNDS; at < meta.length; at += META_STRIDE) meta[at] = EMPTY_BOUNDS;
  return meta;
}

/** Writes `v` (0 to 2^35) as a varint at `at`; returns the offset after it. */
function varint(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}
