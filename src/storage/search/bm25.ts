/** FTS5's `bm25(docs, 10.0, 1.0)` as the in-memory engine computes it (rankQuery.ts) and bounds it (termCursor.ts). */

export const K1 = 1.2;
export const B = 0.75;
/** bm25(docs, 10.0, 1.0): a token in the path weighs ten. */
export const PATH_WEIGHT = 10.0;

/** A term's weighted count in a row, as FTS5 sums it (the column's weight per instance: exact in doubles, both counts small integers). */
export function weightOf(body: number, path: number): number {
  return path * PATH_WEIGHT + body * 1.0;
}

/** Relative margin on a bound: the bound's operations round differently from the score's, by far less than this. */
export const MARGIN = 1 + 1e-9;

/**
 * At least a term's share of a row's score, IDF left out, for any row where the term's weighted count is at most
 * `weight` (`saturated`: no bound) and the row's tokens are at least `ratio` times that count: the share
 * f·(k1+1)/(f + k1·(1 − b + b·D/avgdl)) is (k1+1)/(1 + k1·(1 − b)/f + k1·b·(D/f)/avgdl), which grows with f and
 * shrinks with D/f.
 */
export function termBound(weight: number, saturated: number, ratio: number, avgdl: number): number {
  const perWeight = weight >= saturated ? 0 : (K1 * (1 - B)) / weight;
  return ((K1 + 1.0) / (1 + perWeight + (K1 * B * ratio) / avgdl)) * MARGIN;
}

/** A term's share of a row's score, IDF left out, at weighted count `f` in a row of `length` tokens: f·(k1+1)/(f + k1·(1 − b + b·D/avgdl)). */
export function shareOf(f: number, length: number, avgdl: number): number {
  return (f * (K1 + 1.0)) / (f + K1 * (1 - B + (B * length) / avgdl));
}
