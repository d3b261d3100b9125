import { expect } from 'chai';
import { META_BOUNDS, metaSlot, PAGE_SHIFT, PostingPool } from '../../../src/storage/search/postingPool.js';

/**
 * The pool's first page starts small and doubles up to a whole page (1 MiB of blocks and their links and
 * bounds), so that an organization of a few items holds a few KiB: blocks and their bounds must come through
 * every copy, and the pages after the first are whole.
 */
describe('storage/search: the posting pool grows its first page', () => {
  const WHOLE_PAGE = (1 << PAGE_SHIFT) * (64 + 12);

  it('holds a few KiB for a few lists, a whole page and more once it is large', () => {
    const small = new PostingPool();
    for (let list = 0; list < 20; list++) small.append(PostingPool.start(small.allocate()), 0, 1, 1, 0, 1, 10);
    expect(small.bytes).to.be.below(20 * 1024);
    const large = new PostingPool();
    large.allocate((1 << PAGE_SHIFT) + 10);
    expect(large.bytes).to.equal(2 * WHOLE_PAGE);
  });

  it('keeps every list and every block bound through the first page doubling, and across into the next pages', () => {
    const pool = new PostingPool();
    const LISTS = 600;
    const DOCS = 2_000;
    const heads = Array.from({ length: LISTS }, () => pool.allocate());
    const tails = heads.map((b) => PostingPool.start(b));
    const last = heads.map(() => -1);
    // Lists interleaved, each with its own weights, so that a block copied to the wrong place or a bound lost
    // shows as a wrong document, count or bound.
    for (let doc = 0; doc < DOCS; doc++) {
      for (let list = 0; list < LISTS; list++) {
        if ((doc + list) % 3 === 0) continue;
        const body = 1 + ((doc * 7 + list) % 50);
        tails[list] = pool.append(tails[list] as number, doc, doc - (last[list] as number), body, list % 5 === 0 ? 1 : 0, body, 100 + (doc % 13), 1 + (list % 4));
        last[list] = doc;
      }
    }
    expect(pool.bytes, 'past the first page').to.be.above(WHOLE_PAGE);
    const docs = new Int32Array(DOCS + 64);
    const bodies = new Int32Array(DOCS + 64);
    const paths = new Int32Array(DOCS + 64);
    for (let list = 0; list < LISTS; list++) {
      const n = pool.decode(heads[list] as number, docs, bodies, paths, new Uint8Array(DOCS), 255);
      const want = Array.from({ length: DOCS }, (_, d) => d).filter((d) => (d + list) % 3 !== 0);
      expect(Array.from(docs.subarray(0, n)), `list ${list}`).to.deep.equal(want);
      expect(Array.from(bodies.subarray(0, n)), `list ${list}`).to.deep.equal(want.map((d) => 1 + ((d * 7 + list) % 50)));
      for (let b = heads[list] as number; b !== 0; b = pool.next(b)) {
        const bounds = (pool.metas[b >>> PAGE_SHIFT] as Int32Array)[metaSlot(b) + META_BOUNDS] as number;
        // Every block holds postings of weight 1 or more: its largest weight is never the empty block's 0.
        expect(bounds & 0x7fff, `list ${list}, block ${b}`).to.be.above(0);
      }
    }
  });
});
