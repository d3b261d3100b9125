import { B, K1, MARGIN, weightOf } from './bm25.js';
import { DEAD, type RankIndex } from './rankIndex.js';
import { inRanges, rowScore, type Scoring } from './rowScore.js';
import { END, type TermCursor } from './termCursor.js';
import type { TopDocs } from './topDocs.js';
import type { TopK } from './topK.js';

/** A query's lists by their terms, and what their top documents leave out (topDocs.outsideBound, per list). */
export interface TopLists {
  terms: readonly string[];
  tops: readonly TopDocs[];
  outside: readonly number[];
  exclude: readonly string[];
}

/**
 * The threshold algorithm's first step (rankQuery.ts): offers `heap` every match among the lists' top documents
 * that can enter it, and returns all those documents (in increasing order: the walk leaves them out, offered or
 * not). Those in every list's top documents are scored first, from their counts alone; each of the others is
 * then bounded with the shares it has in top documents and the other lists' `outside`, and only looked up in
 * those lists when the bound can still enter (most cannot: the first ones set the threshold high).
 */
export function scoreTopDocs(index: RankIndex, s: Scoring, lists: TopLists, heap: TopK, counted: { scored: number }): Int32Array {
  const m = lists.tops.length;
  // Plain typed arrays for the loops below (their inputs' arrays come in several element kinds).
  const docsOf = lists.tops.map((t) => t.docs);
  const bodiesOf = lists.tops.map((t) => t.bodies);
  const pathsOf = lists.tops.map((t) => t.paths);
  const horizons = Int32Array.from(lists.tops, (t) => t.horizon);
  const outside = Float64Array.from(lists.outside);
  // Each list's phrases' IDFs together: a bound needs no more (the exact score is rowScore's).
  const weights = new Float64Array(m);
  for (let ph = 0; ph < s.phraseList.length; ph++) {
    const l = s.phraseList[ph] as number;
    weights[l] = (weights[l] as number) + (s.idf[ph] as number);
  }
  const all = docsOf.reduce((n, d) => n + d.length, 0);
  const union = new Int32Array(all);
  // Documents missing from some list's top documents, with the counts known (-1: to look up), m per document.
  const partial = new Int32Array(all);
  const partialBodies = new Int32Array(all * m);
  const partialPaths = new Int32Array(all * m);
  let nUnion = 0;
  let nPartial = 0;
  const at = new Int32Array(m);
  const ends = Int32Array.from(docsOf, (d) => d.length);
  const bodies = new Int32Array(m);
  const paths = new Int32Array(m);
  let excluded = exclusions(index, lists.exclude, s.avgdl);
  for (;;) {
    let doc = END;
    for (let l = 0; l < m; l++) {
      const i = at[l] as number;
      if (i < (ends[l] as number) && ((docsOf[l] as Int32Array)[i] as number) < doc) doc = (docsOf[l] as Int32Array)[i] as number;
    }
    if (doc === END) break;
    union[nUnion++] = doc;
    let known = 0;
    for (let l = 0; l < m; l++) {
      const i = at[l] as number;
      if (i < (ends[l] as number) && (docsOf[l] as Int32Array)[i] === doc) {
        bodies[l] = (bodiesOf[l] as Int32Array)[i] as number;
        paths[l] = (pathsOf[l] as Int32Array)[i] as number;
        at[l] = i + 1;
        known++;
      } else {
        bodies[l] = -1;
        paths[l] = 0;
      }
    }
    if (known === m) {
      if (admits(index, s, doc, excluded)) offer(index, s, heap, doc, bodies, paths, counted);
      continue;
    }
    partial[nPartial] = doc;
    for (let l = 0; l < m; l++) {
      partialBodies[nPartial * m + l] = bodies[l] as number;
      partialPaths[nPartial * m + l] = paths[l] as number;
    }
    nPartial++;
  }
  // The others, in increasing order again (the cursors only move forward).
  excluded = exclusions(index, lists.exclude, s.avgdl);
  const lookups: Array<TermCursor | undefined> = lists.terms.map(() => undefined);
  partials: for (let p = 0; p < nPartial; p++) {
    const doc = partial[p] as number;
    for (let l = 0; l < m; l++) {
      bodies[l] = partialBodies[p * m + l] as number;
      paths[l] = partialPaths[p * m + l] as number;
    }
    if (heap.full) {
      const norm = K1 * (1 - B + (B * index.length(doc)) / s.avgdl);
      let bound = 0.0;
      let pathPossible = false;
      for (let l = 0; l < m; l++) {
        const body = bodies[l] as number;
        if (body < 0) {
          // Past that list's horizon, the document may have any share there: it is looked up.
          bound += doc < (horizons[l] as number) ? (weights[l] as number) * (outside[l] as number) : Infinity;
          continue;
        }
        const f = weightOf(body, paths[l] as number);
        if ((paths[l] as number) > 0) pathPossible = true;
        bound += (weights[l] as number) * ((f * (K1 + 1.0)) / (f + norm));
      }
      if (heap.shutOut(pathPossible, bound * MARGIN)) continue;
    }
    for (let l = 0; l < m; l++) {
      if ((bodies[l] as number) >= 0) continue;
      const cursor = (lookups[l] ??= index.cursor(lists.terms[l] as string, s.avgdl) as TermCursor);
      if (cursor.seek(doc) !== doc) continue partials;
      bodies[l] = cursor.body();
      paths[l] = cursor.path();
    }
    if (admits(index, s, doc, excluded)) offer(index, s, heap, doc, bodies, paths, counted);
  }
  return union.subarray(0, nUnion);
}

/** Cursors over the excluded terms that some document holds. */
export function exclusions(index: RankIndex, exclude: readonly string[], avgdl: number): TermCursor[] {
  return exclude.filter((t) => index.liveCount(t) > 0).map((t) => index.cursor(t, avgdl) as TermCursor);
}

/** Whether a document holding every term is a match: live, readable, in the ranges, without an excluded term. */
function admits(index: RankIndex, s: Scoring, doc: number, excluded: readonly TermCursor[]): boolean {
  const need = index.need(doc);
  if (need === DEAD || ((s.mask >>> need) & 1) === 0) return false;
  if (s.ranges && !inRanges(index.path(doc), s.ranges)) return false;
  for (const list of excluded) if (list.seek(doc) === doc) return false;
  return true;
}

function offer(index: RankIndex, s: Scoring, heap: TopK, doc: number, bodies: Int32Array, paths: Int32Array, counted: { scored: number }): void {
  let inPath = 0;
  for (let l = 0; l < paths.length; l++) if ((paths[l] as number) > 0) inPath = 1;
  counted.scored++;
  heap.offer(doc, -1.0 * rowScore(s, index.length(doc), bodies, paths), inPath);
}
