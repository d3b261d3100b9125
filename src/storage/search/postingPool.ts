/**
 * The postings of the in-memory ranking index (rankIndex.ts): for each term, the documents holding it
 * in increasing order, each with how often the term is in its path and in its body. Kept compact, as
 * bytes: a posting is three varints (the gap from the term's previous document, body count × 2 + 1 when
 * the path has the term too, then the path count if so), about 2-3 bytes where an object would cost 50.
 *
 * A term's postings are a chain of fixed 64-byte blocks in pages of 1 MiB: no copying as a list grows,
 * and a rare term (most terms) costs one block. A block starts with the next block's number; its data
 * ends at the block's end or at a 0 byte (no posting starts with one: a gap is at least 1).
 */

const BLOCK = 64;
const BLOCK_SHIFT = 6;
const PAGE_BLOCKS = 1 << 14;
const HEADER = 4;
/** The most bytes one posting takes (three 5-byte varints). */
const MAX_POSTING = 15;

export class PostingPool {
  private pages: Uint8Array[] = [];
  /** Blocks handed out; block 0 is never used, so 0 means "none". */
  private blocks = 1;
  private readonly scratch = new Uint8Array(MAX_POSTING);

  /** Bytes held (whole pages). */
  get bytes(): number {
    return this.pages.length * PAGE_BLOCKS * BLOCK;
  }

  /** A new, empty block's number. */
  allocate(): number {
    const id = this.blocks++;
    if (id >>> 14 >= this.pages.length) this.pages.push(new Uint8Array(PAGE_BLOCKS * BLOCK));
    return id;
  }

  /**
   * Appends a posting after `at` (the tail block's number × 64 + the offset written up to);
   * returns the new tail position (another block when the posting did not fit).
   */
  append(at: number, gap: number, body: number, path: number): number {
    let n = varint(this.scratch, 0, gap);
    n = varint(this.scratch, n, path > 0 ? body * 2 + 1 : body * 2);
    if (path > 0) n = varint(this.scratch, n, path);
    // A full block ends at offset 64, which is the next block's 0: the position names the byte before it.
    let block = Math.floor((at - 1) / BLOCK);
    let offset = at - block * BLOCK;
    if (offset + n > BLOCK) {
      const next = this.allocate();
      const page = this.pages[block >>> 14] as Uint8Array;
      const base = (block & (PAGE_BLOCKS - 1)) << BLOCK_SHIFT;
      page[base] = next & 0xff;
      page[base + 1] = (next >>> 8) & 0xff;
      page[base + 2] = (next >>> 16) & 0xff;
      page[base + 3] = (next >>> 24) & 0xff;
      block = next;
      offset = HEADER;
    }
    const page = this.pages[block >>> 14] as Uint8Array;
    page.set(this.scratch.subarray(0, n), ((block & (PAGE_BLOCKS - 1)) << BLOCK_SHIFT) + offset);
    return block * BLOCK + offset + n;
  }

  /** Where a new list's first block starts writing. */
  static start(block: number): number {
    return block * BLOCK + HEADER;
  }

  /**
   * Decodes the list starting at `block` into the arrays (room for every posting, dead ones included,
   * is the caller's), skipping documents whose `needs` entry is `dead`; returns how many it wrote.
   * Documents come out in increasing order. One tight loop (no callback per posting): this is most
   * of a query's time.
   */
  decode(block: number, docs: Int32Array, bodies: Int32Array, paths: Int32Array, needs: Uint8Array, dead: number): number {
    let n = 0;
    // A list's first gap counts from -1 (document 0 is a gap of 1: no posting starts with a 0 byte).
    let doc = -1;
    const pages = this.pages;
    while (block !== 0) {
      const page = pages[block >>> 14] as Uint8Array;
      const base = (block & (PAGE_BLOCKS - 1)) << BLOCK_SHIFT;
      const end = base + BLOCK;
      let i = base + HEADER;
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
        doc += v;
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
      }
      block = (page[base] as number) | ((page[base + 1] as number) << 8) | ((page[base + 2] as number) << 16) | ((page[base + 3] as number) << 24);
    }
    return n;
  }
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
