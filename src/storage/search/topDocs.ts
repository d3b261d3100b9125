import { MARGIN, shareOf, weightOf } from './bm25.js';
import { sizedDecoded, type DecodedTerm } from './decodedTerm.js';
import { META_FIRST, metaSlot, PAGE_SHIFT, type PostingPool } from './postingPool.js';

/**
 * A long list's documents of highest BM25 share (the threshold algorithm's "top documents", rankQuery.ts), and
 * a bound on the share of every other document of the part of the list it covers. Two common words' best
 * matches are mostly among both words' top documents: scored first, they set a threshold that the other
 * documents (bounded by `outsideBound`) rarely reach, and the walk over the lists then skips the covered part.
 *
 * It covers the list's blocks before its last one at the time it was made (documents below `horizon`): those
 * never change (a list only grows at its end; documents are never rewritten, only marked dead and maybe revived
 * by a rollback, so dead ones are covered too). The choice of the top documents follows the avgdl of the time it
 * was made; the bound does not depend on it: it keeps, per weighted count among the other documents, their fewest
 * tokens, and the share grows with the count and shrinks with the tokens, so the largest share at any avgdl is one
 * of these pairs. Every document with the term in its path is a top document: the others never have a path match.
 */
export interface TopDocs {
  /** The top documents in increasing order, and the term's body and path counts in each. */
  docs: Int32Array;
  bodies: Int32Array;
  paths: Int32Array;
  /**
   * Per top document, its share at the `avgdl` of the time they were made, rounded up (Infinity with a path
   * match), and the top documents by that share, highest first: at a larger avgdl a share grows by at most the
   * ratio of the two (bm25: the norm's D/avgdl term shrinks by it), so a query can stop at the first too low.
   */
  shares: Float32Array;
  byShare: Uint16Array;
  avgdl: number;
  /** The first document not covered: the first of the block `resume`, which was the list's last. */
  horizon: number;
  resume: number;
  /** Every SKIP_EVERY-th covered block, as its first document and its number: a lookup far ahead jumps (TermCursor.lookup). */
  skips: Int32Array;
  /** Postings covered (dead ones too): the list is covered again once it has grown well past them. */
  covered: number;
  /** The other covered documents' distinct weighted counts, and the fewest tokens of a document with each. */
  outsideWeights: Float64Array;
  outsideLengths: Float64Array;
}

/** Every how many covered blocks `skips` names one (a lookup walks at most this many links past it). */
const SKIP_EVERY = 16;

/** A block's first document. */
function firstOf(pool: PostingPool, block: number): number {
  return (pool.metas[block >>> PAGE_SHIFT] as Int32Array)[metaSlot(block) + META_FIRST] as number;
}

/**
 * Room for one build: the list decoded whole and two arrays of shares, kept from one build to the next. Made anew
 * per build, the load's making of every long list's top documents (rankBuild.ts) allocated ~100 MB of arrays in a
 * third of a second, and the server's RSS after a full GC stayed ~35 MiB higher (the search bench, on minus off:
 * +121 against +84 MiB). Held: room for the longest list built so far, up to KEPT_POSTINGS (28 bytes a posting:
 * ~1.8 MiB at 50,000 items).
 */
let scratch: { list: DecodedTerm; shares: Float64Array; cutting: Float64Array } | undefined;

/** The longest list whose room is kept (28 bytes a posting: 3.5 MiB); a longer one's is made for its build alone. */
const KEPT_POSTINGS = 1 << 17;

function scratchFor(postings: number): { list: DecodedTerm; shares: Float64Array; cutting: Float64Array } {
  if (scratch && scratch.list.docs.length >= postings) return scratch;
  const list = sizedDecoded(postings);
  const made = { list, shares: new Float64Array(list.docs.length), cutting: new Float64Array(list.docs.length) };
  if (list.docs.length <= KEPT_POSTINGS) scratch = made;
  return made;
}

/** Never a document's read rank: a decode that keeps dead documents. */
const KEEP_ALL = 256;

/**
 * The top `size` documents of the list starting at `head` by their share at `avgdl` (all of those tied with
 * the last, and every one with a path match: undefined when those alone are more than `size`, or when the list
 * is a single block), for RankIndex's cache.
 */
export function buildTopDocs(pool: PostingPool, head: number, postings: number, lengths: Uint32Array, needs: Uint8Array, avgdl: number, size: number): TopDocs | undefined {
  const { list, shares: allShares, cutting } = scratchFor(postings);
  let n = 0;
  let block = head;
  const skips: number[] = [];
  for (let next = pool.next(block), b = 0; next !== 0; block = next, next = pool.next(block), b++) {
    if (b % SKIP_EVERY === 0) skips.push(firstOf(pool, block), block);
    n = pool.decodeBlock(block, list.docs, list.body, list.path, n, needs, KEEP_ALL);
  }
  if (block === head || n <= size) return undefined;
  const shares = allShares.subarray(0, n);
  let pathDocs = 0;
  for (let i = 0; i < n; i++) {
    const f = weightOf(list.body[i] as number, list.path[i] as number);
    if ((list.path[i] as number) > 0) pathDocs++;
    shares[i] = (list.path[i] as number) > 0 ? Infinity : shareOf(f, lengths[list.docs[i] as number] as number, avgdl);
  }
  if (pathDocs > size) return undefined;
  const copy = cutting.subarray(0, n);
  copy.set(shares);
  const cut = largest(copy, size);
  let kept = 0;
  for (let i = 0; i < n; i++) if ((shares[i] as number) >= cut) kept++;
  // So many tied with the last that they would cost more than they save (and overflow `byShare`).
  if (kept > 2 * size + 64 || kept > 0xffff) return undefined;
  const top = { docs: new Int32Array(kept), bodies: new Int32Array(kept), paths: new Int32Array(kept), shares: new Float32Array(kept) };
  const fewest = new Map<number, number>();
  for (let i = 0, t = 0; i < n; i++) {
    if ((shares[i] as number) >= cut) {
      // Rounded to a float up, never down (a float's relative error is below 2^-24).
      top.shares[t] = Math.fround((shares[i] as number) * (1 + 1e-6));
      top.docs[t] = list.docs[i] as number;
      top.bodies[t] = list.body[i] as number;
      top.paths[t++] = list.path[i] as number;
      continue;
    }
    const f = weightOf(list.body[i] as number, list.path[i] as number);
    const length = lengths[list.docs[i] as number] as number;
    if (length < (fewest.get(f) ?? Infinity)) fewest.set(f, length);
  }
  const byShare = Uint16Array.from({ length: kept }, (_, i) => i).sort((a, b) => {
    const x = top.shares[a] as number;
    const y = top.shares[b] as number;
    return x > y ? -1 : x < y ? 1 : 0;
  });
  return {
    ...top,
    byShare,
    avgdl,
    horizon: firstOf(pool, block),
    resume: block,
    skips: Int32Array.from(skips),
    covered: n,
    outsideWeights: Float64Array.from(fewest.keys()),
    outsideLengths: Float64Array.from(fewest.values()),
  };
}

/** At least the share (IDF left out) of any covered document that is not a top document, at `avgdl`. */
export function outsideBound(top: TopDocs, avgdl: number): number {
  let most = 0.0;
  for (let i = 0; i < top.outsideWeights.length; i++) {
    const f = top.outsideWeights[i] as number;
    const share = shareOf(f, top.outsideLengths[i] as number, avgdl);
    if (share > most) most = share;
  }
  return most * MARGIN;
}

/** Bytes held by a term's top documents. */
export function topDocsBytes(top: TopDocs): number {
  return top.docs.byteLength * 3 + top.shares.byteLength + top.byShare.byteLength + top.skips.byteLength + top.outsideWeights.byteLength * 2;
}

/** The `rank`-th largest value (1-based) of `values`, which it reorders (quickselect). */
function largest(values: Float64Array, rank: number): number {
  let lo = 0;
  let hi = values.length - 1;
  const want = rank - 1;
  while (lo < hi) {
    const pivot = values[(lo + hi) >>> 1] as number;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while ((values[i] as number) > pivot) i++;
      while ((values[j] as number) < pivot) j--;
      if (i <= j) {
        const v = values[i] as number;
        values[i++] = values[j] as number;
        values[j--] = v;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else return values[want] as number;
  }
  return values[want] as number;
}
