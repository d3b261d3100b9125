import { B, K1, MARGIN, weightOf } from './bm25.js';
import type { RankIndex } from './rankIndex.js';
import { amongTop, exclusions, scoreTopDocs } from './rankTop.js';
import { inRanges, type Scoring } from './rowScore.js';
import { scoreOf } from './searchHits.js';
import { END, type TermCursor } from './termCursor.js';
import { outsideBound, type TopDocs } from './topDocs.js';
import { TopK } from './topK.js';

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

/** What a query did (tests read it: how many documents it scored, against how many match). */
export interface RankStats {
  scored: number;
  /** Whether it scored the lists' top documents first (rankTop.ts). */
  topDocs?: boolean;
}

/**
 * The page `offset`..`offset + limit` of the best matches, exactly as SearchDb.search orders them:
 * path matches first, then FTS5's `bm25(docs, 10.0, 1.0)`, then the path in SQLite's binary order.
 * The score follows fts5Bm25Function step by step (same operations in the same order, so the same
 * doubles): IDF = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6 per phrase, the phrase's frequency
 * the weighted count of its tokens, D all tokens of the row, avgdl over all rows.
 *
 * Block-max: once the best `offset + limit` are held, a stretch of documents is skipped without decoding
 * when, for every term, the block that holds it bounds the term's share of the score (postingPool.ts) and
 * the bounds' sum (or no path match possible) cannot beat the worst one held. The answer is the same as
 * scoring every match; most matches of two common words are never decoded.
 *
 * Top documents (topDocs.ts, rankTop.ts): when every list is long enough to keep them, they are scored first,
 * and the walk leaves them out and bounds every other document below the lists' horizons by what the top
 * documents leave out; two common words then mostly walk only their lists' last blocks. `options.topDocs`
 * false walks without them (benches and tests compare the two).
 */
export function rankPlain(index: RankIndex, q: PlainQuery, stats?: RankStats, options: { topDocs?: boolean } = {}): RankedRow[] {
  const want = q.offset + q.limit;
  if (want <= 0 || index.liveDocs === 0 || q.include.length === 0) return [];
  const nRow = index.liveDocs;
  const avgdl = index.liveTokens / nRow;
  const distinct = [...new Set(q.include)];
  const counts = distinct.map((t) => index.liveCount(t));
  if (counts.some((n) => n === 0)) return [];
  // The rarest list leads: the others are sought from its documents.
  const order = distinct.map((_, i) => i).sort((a, b) => (counts[a] as number) - (counts[b] as number));
  const terms = order.map((i) => distinct[i] as string);
  const lists = terms.map((t) => index.cursor(t, avgdl) as TermCursor);
  const exclude = [...new Set(q.exclude)];
  const excluded = exclusions(index, exclude, avgdl);
  // Per phrase of the query, in its order: which list (in `lists`), and its IDF.
  const phraseList = q.include.map((t) => order.indexOf(distinct.indexOf(t)));
  const idf = q.include.map((t) => {
    const nHit = counts[distinct.indexOf(t)] as number;
    const v = Math.log((nRow - nHit + 0.5) / (nHit + 0.5));
    return v <= 0.0 ? 1e-6 : v;
  });
  const mask = q.needs.reduce((m, n) => m | (1 << n), 0);
  const scoring: Scoring = { phraseList, idf, avgdl, mask, ranges: q.ranges };
  const heap = new TopK(index, want);
  const counted = { scored: 0 };
  // Threshold algorithm: when every list has top documents (long lists), those are scored first, and the walk
  // leaves them out (`covered`) and bounds the other documents below the lists' horizons by `outside`.
  const tops = options.topDocs === false ? [] : terms.map((t) => index.topDocs(t, avgdl));
  let covered: TopDocs[] | undefined;
  let coveredTo = 0;
  let outsideSum = 0.0;
  if (tops.length > 0 && tops.every((t) => t !== undefined)) {
    const outside = (tops as TopDocs[]).map((t) => outsideBound(t, avgdl));
    lists.forEach((list, l) => list.cover(tops[l] as TopDocs, outside[l] as number));
    if (stats) stats.topDocs = true;
    covered = tops as TopDocs[];
    scoreTopDocs(index, scoring, { terms, tops: covered, outside, exclude }, heap, counted);
    coveredTo = Math.min(...(tops as TopDocs[]).map((t) => t.horizon));
    for (let ph = 0; ph < phraseList.length; ph++) outsideSum += (idf[ph] as number) * (outside[phraseList[ph] as number] as number);
  }
  const coveredAt = new Int32Array(lists.length);
  const normPart = 1 - B;
  const driver = lists[0] as TermCursor;
  // The lead's phrases' IDFs together: its share of a row's score is that times its term's share.
  let leadIdf = 0.0;
  for (let ph = 0; ph < phraseList.length; ph++) if (phraseList[ph] === 0) leadIdf += idf[ph] as number;
  let doc = 0;
  // The bounds of the blocks that may hold `doc`: the lead's, valid through `leadTo`, and the others' together,
  // through `restTo` (each kept until `doc` passes it: most candidates reuse them).
  let leadTo = -1;
  let leadBound = 0.0;
  let leadPath = false;
  let restTo = -1;
  let restBound = 0.0;
  let restPath = false;
  candidates: while (doc < END) {
    if (heap.full) {
      if (doc < coveredTo && heap.shutOut(false, outsideSum)) {
        // None of the documents below the horizons but the top ones (scored already) can enter.
        doc = coveredTo;
        for (const list of lists) list.skipCovered(doc);
      }
      if (doc > leadTo) {
        driver.shallow(doc);
        leadTo = driver.blockEnd;
        leadBound = leadIdf * driver.bound;
        leadPath = driver.hasPath;
      }
      if (doc > restTo) {
        restTo = END;
        restBound = 0.0;
        restPath = false;
        for (let l = 1; l < lists.length; l++) {
          const list = lists[l] as TermCursor;
          list.shallow(doc);
          if (list.blockEnd < restTo) restTo = list.blockEnd;
          if (list.hasPath) restPath = true;
        }
        for (let ph = 0; ph < phraseList.length; ph++) {
          const l = phraseList[ph] as number;
          if (l !== 0) restBound += (idf[ph] as number) * (lists[l] as TermCursor).bound;
        }
      }
      if (heap.shutOut(leadPath || restPath, leadBound + restBound)) {
        // No document up to the first of these blocks' ends can enter (a last block ends at END - 1).
        doc = Math.min(leadTo, restTo) + 1;
        continue;
      }
    }
    const candidate = driver.seek(doc);
    if (candidate === END) break;
    if (heap.full && (candidate > leadTo || candidate > restTo)) {
      // The lead jumped past the blocks just judged: judge the ones it landed in first.
      doc = candidate;
      continue;
    }
    // fts5Bm25Function's `k1 * (1 - b + b * D / avgdl)`, the same for every phrase of the row: computed once, in the same steps.
    const norm = K1 * (normPart + (B * index.length(candidate)) / avgdl);
    if (heap.full && lists.length > 1) {
      // The lead's share is known exactly now: with the other lists' block bounds, can the candidate still enter?
      const f = weightOf(driver.body(), driver.path());
      const exact = leadIdf * ((f * (K1 + 1.0)) / (f + norm)) * MARGIN;
      if (heap.shutOut(driver.path() > 0 || restPath, exact + restBound)) {
        doc = candidate + 1;
        continue;
      }
    }
    for (let l = 1; l < lists.length; l++) {
      const found = (lists[l] as TermCursor).seek(candidate);
      if (found === END) break candidates;
      if (found !== candidate) {
        doc = found;
        continue candidates;
      }
    }
    doc = candidate + 1;
    // A top document: offered already, or shut out for good.
    if (covered && amongTop(covered, coveredAt, candidate)) continue;
    for (const list of excluded) if (list.seek(candidate) === candidate) continue candidates;
    if (((mask >>> index.need(candidate)) & 1) === 0) continue;
    if (q.ranges && !inRanges(index.path(candidate), q.ranges)) continue;
    let inPath = 0;
    for (const list of lists) if (list.path() > 0) inPath = 1;
    // rowScore's steps, written out here as the candidates' loop is most of a walk's time.
    let score = 0.0;
    for (let ph = 0; ph < phraseList.length; ph++) {
      const list = lists[phraseList[ph] as number] as TermCursor;
      const f = weightOf(list.body(), list.path());
      score += (idf[ph] as number) * ((f * (K1 + 1.0)) / (f + norm));
    }
    counted.scored++;
    heap.offer(candidate, -1.0 * score, inPath);
  }
  if (stats) stats.scored = counted.scored;
  return heap.sorted().slice(q.offset).map(({ doc: d, rank, inPath }) => ({ id: index.rowid(d), path: index.path(d), score: scoreOf(inPath, rank) }));
}
