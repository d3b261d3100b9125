import { B, K1, MARGIN, weightOf } from './bm25.js';
import type { RankIndex } from './rankIndex.js';
import { DEAD } from './termLists.js';
import { inRanges, rowScore, type Scoring } from './rowScore.js';
import type { TermCursor } from './termCursor.js';
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
 * that can enter it (the walk then leaves all of those out, offered or not). Those in every list's top documents
 * are scored first, from their counts alone; then each list's others, each bounded by the shares it has in top
 * documents and the other lists' `outside`, and only looked up in those lists when the bound can still enter
 * (most cannot: the first ones set the threshold high). Each pass goes in increasing order (cursors only move
 * forward) and matches a document against the other lists' top documents with a pointer per list.
 */
export function scoreTopDocs(index: RankIndex, s: Scoring, lists: TopLists, heap: TopK, counted: { scored: number }): void {
  const m = lists.tops.length;
  const docsOf: Int32Array[] = [];
  const bodiesOf: Int32Array[] = [];
  const pathsOf: Int32Array[] = [];
  const horizons = new Int32Array(m);
  const outside = new Float64Array(m);
  for (let l = 0; l < m; l++) {
    const top = lists.tops[l] as TopDocs;
    docsOf.push(top.docs);
    bodiesOf.push(top.bodies);
    pathsOf.push(top.paths);
    horizons[l] = top.horizon;
    outside[l] = lists.outside[l] as number;
  }
  // Each list's phrases' IDFs together: a bound needs no more (the exact score is rowScore's).
  const weights = new Float64Array(m);
  for (let ph = 0; ph < s.phraseList.length; ph++) {
    const l = s.phraseList[ph] as number;
    weights[l] = (weights[l] as number) + (s.idf[ph] as number);
  }
  const at = new Int32Array(m);
  const bodies = new Int32Array(m);
  const paths = new Int32Array(m);
  /** Where `doc` is among list j's top documents (moving its pointer up to it), -1 when it is not. */
  const find = (j: number, doc: number): number => {
    const docs = docsOf[j] as Int32Array;
    let i = at[j] as number;
    while (i < docs.length && (docs[i] as number) < doc) i++;
    at[j] = i;
    return i < docs.length && docs[i] === doc ? i : -1;
  };
  /**
   * With two lists, list l's top documents that may enter, in increasing order: by share, highest first, up to
   * the first that cannot (its share, as it may have grown since, and the other list's `outside`), and those past
   * the other list's horizon (its last few), whatever their share. Those in both lists' top documents are among
   * them when they have the share (scored already, they are passed over).
   */
  const best = (l: number): Int32Array => {
    const top = lists.tops[l] as TopDocs;
    const other = 1 - l;
    const rest = (weights[other] as number) * (outside[other] as number);
    const grown = (s.avgdl > top.avgdl ? s.avgdl / top.avgdl : 1) * MARGIN * (weights[l] as number);
    if (pickedScratch.length < top.docs.length) pickedScratch = new Int32Array(top.docs.length * 2);
    const picked = pickedScratch;
    let n = 0;
    for (let i = top.docs.length - 1; i >= 0 && (top.docs[i] as number) >= (horizons[other] as number); i--) picked[n++] = i;
    for (let r = 0; r < top.byShare.length; r++) {
      const i = top.byShare[r] as number;
      if (heap.full && heap.shutOut((top.paths[i] as number) > 0, (top.shares[i] as number) * grown + rest)) break;
      if ((top.docs[i] as number) < (horizons[other] as number)) picked[n++] = i;
    }
    return picked.subarray(0, n).sort();
  };
  /** Pass -1 of two lists: both lists' top documents merged (the general pass seeks each in the others). */
  const both = (): void => {
    const a = docsOf[0] as Int32Array;
    const b = docsOf[1] as Int32Array;
    const excluded = exclusions(index, lists.exclude, s.avgdl);
    for (let i = 0, j = 0; i < a.length && j < b.length; ) {
      const x = a[i] as number;
      const y = b[j] as number;
      if (x !== y) {
        if (x < y) i++;
        else j++;
        continue;
      }
      bodies[0] = (bodiesOf[0] as Int32Array)[i] as number;
      paths[0] = (pathsOf[0] as Int32Array)[i++] as number;
      bodies[1] = (bodiesOf[1] as Int32Array)[j] as number;
      paths[1] = (pathsOf[1] as Int32Array)[j++] as number;
      if (admits(index, s, x, excluded)) offer(index, s, heap, x, bodies, paths, counted);
    }
  };
  for (let pass = -1; pass < m; pass++) {
    if (pass < 0 && m === 2) {
      both();
      continue;
    }
    // Pass -1: list 0's top documents that are every list's; pass l: list l's others (of two lists, the best).
    const l = pass < 0 ? 0 : pass;
    const docs = docsOf[l] as Int32Array;
    const picked = pass >= 0 && m === 2 ? best(l) : undefined;
    at.fill(0);
    const excluded = exclusions(index, lists.exclude, s.avgdl);
    const lookups = new Array<TermCursor | undefined>(m).fill(undefined);
    const n = picked ? picked.length : docs.length;
    documents: for (let c = 0; c < n; c++) {
      const i = picked ? (picked[c] as number) : c;
      const doc = docs[i] as number;
      let known = 1;
      let earlier = false;
      for (let j = 0; j < m; j++) {
        const k = j === l ? i : find(j, doc);
        bodies[j] = k < 0 ? -1 : ((bodiesOf[j] as Int32Array)[k] as number);
        paths[j] = k < 0 ? 0 : ((pathsOf[j] as Int32Array)[k] as number);
        if (k >= 0 && j !== l) {
          known++;
          if (j < l) earlier = true;
        }
      }
      // Scored in pass -1 (every list's), or in the pass of an earlier list that has it.
      if ((pass < 0) !== (known === m) || earlier) continue;
      if (pass >= 0 && heap.full) {
        const norm = K1 * (1 - B + (B * index.length(doc)) / s.avgdl);
        let bound = 0.0;
        let pathPossible = false;
        for (let j = 0; j < m; j++) {
          const body = bodies[j] as number;
          if (body < 0) {
            // Past that list's horizon, the document may have any share there: it is looked up.
            bound += doc < (horizons[j] as number) ? (weights[j] as number) * (outside[j] as number) : Infinity;
            continue;
          }
          const f = weightOf(body, paths[j] as number);
          if ((paths[j] as number) > 0) pathPossible = true;
          bound += (weights[j] as number) * ((f * (K1 + 1.0)) / (f + norm));
        }
        if (heap.shutOut(pathPossible, bound * MARGIN)) continue;
      }
      for (let j = 0; j < m && known < m; j++) {
        if ((bodies[j] as number) >= 0) continue;
        const cursor = (lookups[j] ??= index.cursor(lists.terms[j] as string, s.avgdl) as TermCursor);
        if (!cursor.lookup(doc, (lists.tops[j] as TopDocs).skips)) continue documents;
        bodies[j] = cursor.body();
        paths[j] = cursor.path();
      }
      if (admits(index, s, doc, excluded)) offer(index, s, heap, doc, bodies, paths, counted);
    }
  }
}

/** Whether `doc` is among the top documents of one of the lists (`at`: a pointer per list, moved up to `doc`). */
export function amongTop(tops: readonly TopDocs[], at: Int32Array, doc: number): boolean {
  for (let l = 0; l < tops.length; l++) {
    const docs = (tops[l] as TopDocs).docs;
    let i = at[l] as number;
    while (i < docs.length && (docs[i] as number) < doc) i++;
    at[l] = i;
    if (docs[i] === doc) return true;
  }
  return false;
}

/**
 * Where `best` picks a list's top documents, kept from query to query: not an array per query (8 KiB at 2,048
 * top documents, outside V8's heap, for the collector to free). Two lists' picks are taken in turn, never at once.
 */
let pickedScratch = new Int32Array(4096);

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
