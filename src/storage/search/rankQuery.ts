import { decodedTerm, type DecodedTerm, type RankIndex } from './rankIndex.js';
import { scoreOf } from './searchHits.js';

/** One ranked hit of the in-memory engine, as SearchDb.search returns one (`id` is the FTS5 rowid). */
export interface RankedRow {
  id: number;
  path: string;
  score: number;
}

/** A query the in-memory engine answers: every term one token, none a prefix (see SearchIndex). */
export interface PlainQuery {
  /** The included terms' tokens, in the query's order (repeats kept: FTS5 scores each phrase). */
  include: readonly string[];
  exclude: readonly string[];
  needs: readonly number[];
  ranges?: ReadonlyArray<{ from: string; to: string }>;
  limit: number;
  offset: number;
}

const K1 = 1.2;
const B = 0.75;
/** bm25(docs, 10.0, 1.0): a token in the path weighs ten. */
const PATH_WEIGHT = 10.0;

/** Reused between queries (one query runs at a time: the engine is synchronous). */
const scratch: DecodedTerm[] = [];

/**
 * The page `offset`..`offset + limit` of the best matches, exactly as SearchDb.search orders them:
 * path matches first, then FTS5's `bm25(docs, 10.0, 1.0)`, then the path in SQLite's binary order.
 * The score follows fts5Bm25Function step by step (same operations in the same order, so the same
 * doubles): IDF = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6 per phrase, the phrase's frequency
 * the weighted count of its tokens, D all tokens of the row, avgdl over all rows.
 */
export function rankPlain(index: RankIndex, q: PlainQuery): RankedRow[] {
  const want = q.offset + q.limit;
  if (want <= 0 || index.liveDocs === 0 || q.include.length === 0) return [];
  const distinct = [...new Set(q.include)];
  const lists: DecodedTerm[] = [];
  for (let i = 0; i < distinct.length; i++) {
    const decoded = index.decode(distinct[i] as string, (scratch[i] ??= decodedTerm()));
    if (!decoded || decoded.n === 0) return [];
    if (!decoded.cached) scratch[i] = decoded;
    lists.push(decoded);
  }
  const excluded: DecodedTerm[] = [];
  for (const term of new Set(q.exclude)) {
    const at = lists.length + excluded.length;
    const decoded = index.decode(term, (scratch[at] ??= decodedTerm()));
    if (decoded && decoded.n > 0) {
      if (!decoded.cached) scratch[at] = decoded;
      excluded.push(decoded);
    }
  }
  const nRow = index.liveDocs;
  const avgdl = index.liveTokens / nRow;
  // Per phrase of the query, in its order: which list, and its IDF.
  const phraseList = q.include.map((t) => distinct.indexOf(t));
  const idf = phraseList.map((l) => {
    const nHit = (lists[l] as DecodedTerm).n;
    const v = Math.log((nRow - nHit + 0.5) / (nHit + 0.5));
    return v <= 0.0 ? 1e-6 : v;
  });
  const order = lists.map((_, i) => i).sort((a, b) => (lists[a] as DecodedTerm).n - (lists[b] as DecodedTerm).n);
  const driverAt = order[0] as number;
  const driver = lists[driverAt] as DecodedTerm;
  // Where each list stands: the driver at the candidate, the others where the AND found it.
  const at = new Int32Array(lists.length);
  const atExcluded = new Int32Array(excluded.length);
  const mask = q.needs.reduce((m, n) => m | (1 << n), 0);
  const heap = new TopK(index, want);
  const normPart = 1 - B;

  candidates: for (let i = 0; i < driver.n; i++) {
    const doc = driver.docs[i] as number;
    at[driverAt] = i;
    for (let o = 1; o < order.length; o++) {
      const l = order[o] as number;
      const list = lists[l] as DecodedTerm;
      const p = seek(list, at[l] as number, doc);
      at[l] = p;
      if (p === list.n) break candidates;
      if (list.docs[p] !== doc) continue candidates;
    }
    for (let e = 0; e < excluded.length; e++) {
      const list = excluded[e] as DecodedTerm;
      const p = seek(list, atExcluded[e] as number, doc);
      atExcluded[e] = p;
      if (p < list.n && list.docs[p] === doc) continue candidates;
    }
    if (((mask >>> index.need(doc)) & 1) === 0) continue;
    if (q.ranges && !inRanges(index.path(doc), q.ranges)) continue;
    let inPath = 0;
    for (let l = 0; l < lists.length; l++) if (((lists[l] as DecodedTerm).path[at[l] as number] as number) > 0) inPath = 1;
    // fts5Bm25Function's `k1 * (1 - b + b * D / avgdl)`, the same for every phrase of the row: computed once, in the same steps.
    const norm = K1 * (normPart + (B * index.length(doc)) / avgdl);
    let score = 0.0;
    for (let ph = 0; ph < phraseList.length; ph++) {
      const l = phraseList[ph] as number;
      const list = lists[l] as DecodedTerm;
      const p = at[l] as number;
      // FTS5 adds the column's weight per instance: exact in doubles, as both counts are small integers.
      const f = (list.path[p] as number) * PATH_WEIGHT + (list.body[p] as number) * 1.0;
      score += (idf[ph] as number) * ((f * (K1 + 1.0)) / (f + norm));
    }
    heap.offer(doc, -1.0 * score, inPath);
  }
  return heap.sorted().slice(q.offset).map(({ doc, rank, inPath }) => ({ id: index.rowid(doc), path: index.path(doc), score: scoreOf(inPath, rank) }));
}

/** The first position at or after `from` whose document is at least `doc` (galloping, then binary search). */
function seek(list: DecodedTerm, from: number, doc: number): number {
  const docs = list.docs;
  const n = list.n;
  if (from >= n || (docs[from] as number) >= doc) return from;
  let step = 1;
  let lo = from;
  let hi = from + 1;
  while (hi < n && (docs[hi] as number) < doc) {
    lo = hi;
    step *= 2;
    hi = from + step;
  }
  if (hi > n) hi = n;
  // docs[lo] < doc, and docs[hi] >= doc or hi === n.
  while (lo + 1 < hi) {
    const mid = (lo + hi) >>> 1;
    if ((docs[mid] as number) < doc) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** Whether `path` is in one of the [from, to) ranges, compared as SQLite compares text (UTF-8 bytes, that is code points). */
function inRanges(path: string, ranges: ReadonlyArray<{ from: string; to: string }>): boolean {
  return ranges.some((r) => comparePaths(path, r.from) >= 0 && comparePaths(path, r.to) < 0);
}

/** Code point order (SQLite's BINARY collation over UTF-8), where JavaScript compares UTF-16 units. */
export function comparePaths(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (D800-DFFF) encode code points above FFFF: they sort after E000-FFFF.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** The best `k` candidates seen, the worst of them at the root. */
class TopK {
  private readonly docs: Int32Array;
  private readonly ranks: Float64Array;
  private readonly inPath: Uint8Array;
  private size = 0;

  constructor(
    private readonly index: RankIndex,
    private readonly k: number,
  ) {
    this.docs = new Int32Array(k);
    this.ranks = new Float64Array(k);
    this.inPath = new Uint8Array(k);
  }

  offer(doc: number, rank: number, inPath: number): void {
    if (this.size < this.k) {
      this.docs[this.size] = doc;
      this.ranks[this.size] = rank;
      this.inPath[this.size] = inPath;
      this.up(this.size++);
    } else if (this.before(doc, rank, inPath, 0)) {
      this.docs[0] = doc;
      this.ranks[0] = rank;
      this.inPath[0] = inPath;
      this.down(0);
    }
  }

  /** Best first. */
  sorted(): Array<{ doc: number; rank: number; inPath: number }> {
    const out = Array.from({ length: this.size }, (_, i) => ({ doc: this.docs[i] as number, rank: this.ranks[i] as number, inPath: this.inPath[i] as number }));
    return out.sort((a, b) => (a.inPath !== b.inPath ? b.inPath - a.inPath : a.rank !== b.rank ? a.rank - b.rank : comparePaths(this.index.path(a.doc), this.index.path(b.doc))));
  }

  /** Whether the candidate ranks before the one at heap position `i`. */
  private before(doc: number, rank: number, inPath: number, i: number): boolean {
    const otherIn = this.inPath[i] as number;
    if (inPath !== otherIn) return inPath > otherIn;
    const otherRank = this.ranks[i] as number;
    if (rank !== otherRank) return rank < otherRank;
    return comparePaths(this.index.path(doc), this.index.path(this.docs[i] as number)) < 0;
  }

  /** Whether position i ranks after position j (so belongs nearer the root). */
  private after(i: number, j: number): boolean {
    return this.before(this.docs[j] as number, this.ranks[j] as number, this.inPath[j] as number, i);
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.after(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < this.size && this.after(l, worst)) worst = l;
      if (r < this.size && this.after(r, worst)) worst = r;
      if (worst === i) return;
      this.swap(i, worst);
      i = worst;
    }
  }

  private swap(i: number, j: number): void {
    const d = this.docs[i] as number;
    this.docs[i] = this.docs[j] as number;
    this.docs[j] = d;
    const r = this.ranks[i] as number;
    this.ranks[i] = this.ranks[j] as number;
    this.ranks[j] = r;
    const p = this.inPath[i] as number;
    this.inPath[i] = this.inPath[j] as number;
    this.inPath[j] = p;
  }
}
