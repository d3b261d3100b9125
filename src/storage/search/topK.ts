import type { RankIndex } from './rankIndex.js';

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
export class TopK {
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

  /** Whether it holds `k` candidates: from then on, only better ones enter. */
  get full(): boolean {
    return this.size === this.k;
  }

  /**
   * Whether, once full, no candidate can enter whose score is below `bound` and who has a path match only
   * if `pathPossible`: path matches rank above all others, then the score; an equal score could still enter by
   * its path, so only a bound below the worst one's score shuts a candidate out.
   */
  shutOut(pathPossible: boolean, bound: number): boolean {
    const worstInPath = this.inPath[0] === 1;
    if (pathPossible && !worstInPath) return false;
    if (!pathPossible && worstInPath) return true;
    return bound < -(this.ranks[0] as number);
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
