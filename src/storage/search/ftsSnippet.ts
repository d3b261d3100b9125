import { asciiSnippetTokens, snippetTokens, type SnippetTokens } from './snippetTokens.js';

/** snippet(docs, 1, '«', '»', '…', 32), as SearchDb asks FTS5 for it. */
const OPEN = '«';
const CLOSE = '»';
const ELLIPSIS = '…';
const TOKENS = 32;

/**
 * FTS5's snippet() of a body, in JavaScript, for queries of single-token phrases (the in-memory
 * engine's): the same window, marks and ellipses as fts5SnippetFunction (fts5_aux.c) gives, from the
 * body alone, where snippet() runs the MATCH again for the row (0.17 ms for a common word, measured).
 * `phrases` are the query's included tokens in its order (repeats kept: each is a phrase to FTS5;
 * excluded phrases have no instance in a matching row). A differential test holds it to snippet().
 *
 * Followed step by step: each instance of a phrase in the body scores the 32-token window it starts
 * (1000 per phrase not yet seen in it, 1 per repeat) and is centred; a window from the start of its
 * sentence scores 100 more (120 at the body's start); the best wins, ties to the first.
 */
export function snippetOf(body: string, phrases: readonly string[]): string {
  return snippetFrom(body, snippetTokens(body, phrases), phrases);
}

/**
 * snippetOf for a stored body read as its UTF-8 bytes: an ASCII one is scanned as bytes and turned into text
 * at once (latin1: a byte a code unit, no decoding); any other is read as text, by `text`, as SQLite gives it.
 */
export function snippetOfStored(bytes: Uint8Array, text: () => string, phrases: readonly string[]): string {
  const tokens = asciiSnippetTokens(bytes, phrases);
  if (tokens === null) return snippetOf(text(), phrases);
  return snippetFrom(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'), tokens, phrases);
}

function snippetFrom(body: string, tokens: SnippetTokens, phrases: readonly string[]): string {
  const { size, edges, instPos, instPhrase, firsts } = tokens;
  // Instances are in position order: a window's are found by a binary search, not by a pass over all of them
  // (a snippet of a common word scores a window per instance: that pass made it quadratic).
  const seen = new Uint8Array(phrases.length);
  let windowFirst = -1;
  let windowLast = 0;
  /** A window's score: 1000 per phrase first seen in [from, from + 32), 1 per repeat; where its instances lie. */
  const score = (from: number): number => {
    const end = from + TOKENS;
    seen.fill(0);
    let total = 0;
    windowFirst = -1;
    windowLast = 0;
    let lo = 0;
    let hi = instPos.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((instPos[mid] as number) < from) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < instPos.length && (instPos[i] as number) < end; i++) {
      const io = instPos[i] as number;
      const ip = instPhrase[i] as number;
      total += seen[ip] ? 1 : 1000;
      seen[ip] = 1;
      if (windowFirst < 0) windowFirst = io;
      windowLast = io + 1;
    }
    return total;
  };

  let best = 0;
  let bestStart = 0;
  // The sentence each instance is in: instances come in position order, so the index only moves on.
  let jj = 0;
  for (const io of instPos) {
    const s = score(io);
    // Centred on the window's instances, kept within the body.
    let adj = windowFirst - Math.trunc((TOKENS - (windowLast - windowFirst)) / 2);
    if (adj + TOKENS > size) adj = size - TOKENS;
    if (adj < 0) adj = 0;
    if (s > best) {
      best = s;
      bestStart = adj;
    }
    if (firsts.length > 0 && size > TOKENS) {
      while (jj < firsts.length - 1 && (firsts[jj + 1] as number) <= io) jj++;
      const sentence = firsts[jj] as number;
      if (sentence < io) {
        const t = score(sentence) + (sentence === 0 ? 120 : 100);
        if (t > best) {
          best = t;
          bestStart = sentence;
        }
      }
    }
  }
  return highlight(body, edges, distinctSorted(instPos), bestStart, size);
}

/** fts5HighlightCb over the window [start, start + 32): marks around each matched token, text between copied. */
function highlight(body: string, edges: Int32Array, matches: number[], rangeStart: number, size: number): string {
  const rangeEnd = rangeStart + TOKENS - 1;
  let out = rangeStart > 0 ? ELLIPSIS : '';
  // The coalesced instances: single tokens here, so each matched position.
  let m = 0;
  while (m < matches.length && (matches[m] as number) < rangeStart) m++;
  const iterStart = (): number => (m < matches.length ? (matches[m] as number) : -1);
  let off = 0;
  let open = false;
  for (let pos = Math.max(0, rangeStart); pos <= rangeEnd && pos < size; pos++) {
    const s = edges[2 * pos] as number;
    const e = edges[2 * pos + 1] as number;
    if (rangeStart && pos === rangeStart) off = s;
    const at = iterStart();
    if (open && (pos <= at || at < 0) && s > off) {
      out += CLOSE;
      open = false;
    }
    if (pos === at && !open) {
      out += body.slice(off, s) + OPEN;
      off = s;
      open = true;
    }
    if (pos === at) {
      if (!open) {
        out += OPEN;
        open = true;
      }
      out += body.slice(off, e);
      off = e;
      m++;
    }
    if (pos === rangeEnd) {
      if (open) {
        const next = iterStart();
        if (next >= 0 && pos >= next) {
          out += body.slice(off, e);
          off = e;
        }
        out += CLOSE;
        open = false;
      }
      out += body.slice(off, e);
      off = e;
    }
  }
  if (open) out += CLOSE;
  return rangeEnd >= size - 1 ? out + body.slice(off) : out + ELLIPSIS;
}

function distinctSorted(xs: number[]): number[] {
  const out: number[] = [];
  for (const x of xs) if (out[out.length - 1] !== x) out.push(x);
  return out;
}
