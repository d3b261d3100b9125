import { B, K1, weightOf } from './bm25.js';
import { comparePaths } from './topK.js';

/** What scoring a matching document takes, the same for a query's walk (rankQuery.ts) and its top documents (rankTop.ts). */
export interface Scoring {
  /** Per phrase of the query, in its order: which of the query's lists, and its IDF. */
  phraseList: readonly number[];
  idf: readonly number[];
  avgdl: number;
  /** The read ranks allowed, as bits. */
  mask: number;
  ranges?: ReadonlyArray<{ from: string; to: string }> | undefined;
}

/**
 * fts5Bm25Function's score of a row of `length` tokens whose lists hold it with these counts (per list of the
 * query), in its steps: `k1 * (1 - b + b * D / avgdl)` once, then each phrase's share in the query's order.
 */
export function rowScore(s: Scoring, length: number, bodies: Int32Array, paths: Int32Array): number {
  const norm = K1 * (1 - B + (B * length) / s.avgdl);
  let score = 0.0;
  for (let ph = 0; ph < s.phraseList.length; ph++) {
    const l = s.phraseList[ph] as number;
    const f = weightOf(bodies[l] as number, paths[l] as number);
    score += (s.idf[ph] as number) * ((f * (K1 + 1.0)) / (f + norm));
  }
  return score;
}

/** Whether `path` is in one of the [from, to) ranges, compared as SQLite compares text (UTF-8 bytes, that is code points). */
export function inRanges(path: string, ranges: ReadonlyArray<{ from: string; to: string }>): boolean {
  return ranges.some((r) => comparePaths(path, r.from) >= 0 && comparePaths(path, r.to) < 0);
}
