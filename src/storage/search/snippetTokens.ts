import { ASCII_KINDS, ASCII_SPLITS_ALONE, tokenizeFor } from './unicode61.js';

/**
 * A body's tokens as a snippet scores and marks them (ftsSnippet.ts): where each token lies, which of the
 * query's phrases each matches (its instances, in FTS5's order: by position, then by phrase), and which
 * tokens start a sentence (fts5SentenceFinderCb). Valid until the next call: the arrays are reused, since a
 * page's ten snippets would otherwise allocate an array of every token ten times.
 */
export interface SnippetTokens {
  size: number;
  /** UTF-16 offsets of token k: [edges[2k], edges[2k + 1]), for k < size. */
  edges: Int32Array;
  instPos: number[];
  instPhrase: number[];
  /** The positions of tokens that start a sentence, ascending; the first token always. */
  firsts: number[];
}

const out: SnippetTokens = { size: 0, edges: new Int32Array(2048), instPos: [], instPhrase: [], firsts: [] };

/** The tokens of `body` against `phrases` (folded tokens), by the tokenizer. */
export function snippetTokens(body: string, phrases: readonly string[]): SnippetTokens {
  makeRoom(body.length);
  generalTokens(body, phrases);
  return out;
}

/**
 * The tokens of a stored body given as its UTF-8 bytes, scanned as bytes when they are all ASCII (then each byte
 * is a code unit of the text, at the same offset), or null: the caller reads the text and calls `snippetTokens`.
 * The body need not be decoded but for the window it shows.
 */
export function asciiSnippetTokens(bytes: Uint8Array, phrases: readonly string[]): SnippetTokens | null {
  if (!ASCII_SPLITS_ALONE) return null;
  makeRoom(bytes.length);
  return asciiTokens(bytes, phrases) ? out : null;
}

/** Edges kept between calls at most: a big body's array (4 bytes a code unit) goes at the next small one. */
const KEPT_EDGES = 1 << 16;

/** The edges held between calls now (tests: a big body's room is not kept). */
export function edgesHeld(): number {
  return out.edges.length;
}

/** Every code unit may start or end a token (at most one edge each), and the last token's end: units + 1 edges. */
function makeRoom(units: number): void {
  const need = units + 2;
  if (out.edges.length < need || (out.edges.length > KEPT_EDGES && need <= KEPT_EDGES)) out.edges = new Int32Array(Math.max(need, 2048));
}

function reset(): void {
  out.size = 0;
  out.instPos.length = 0;
  out.instPhrase.length = 0;
  out.firsts.length = 0;
}

/** 1 for a byte that is part of a token in an ASCII text (ASCII_SPLITS_ALONE: a letter or digit), else 0. */
const IN_TOKEN = Uint8Array.from({ length: 0x100 }, (_, c) => (c < 0x80 && ASCII_KINDS[c] !== 0 ? 1 : 0));
/** An ASCII byte as the tokenizer folds it (upper case letters lowered; ASCII_SPLITS_ALONE). */
const FOLDED = Uint8Array.from({ length: 0x100 }, (_, c) => (c < 0x80 && ASCII_KINDS[c] === 2 ? String.fromCharCode(c).toLowerCase().charCodeAt(0) : c));

/** Whitespace as fts5SentenceFinderCb skips it, and the two marks that end a sentence before it. */
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const STOP = 0x2e;
const COLON = 0x3a;

/**
 * Two passes, no string built; false (and `out` not to be used) when a byte is outside ASCII. The first pass
 * writes where the bytes go from separator to token or back (`edges`: start and end of each token in turn) without
 * a branch on the text: a branch per token boundary, mispredicted on real text, made a pass that kept its tokens
 * cost 4.6 µs for 2 KB against 1.7 µs this way (measured). The second goes over the tokens: the sentence rule looked
 * up behind each, and a token compared, folded, with each phrase of its length.
 */
function asciiTokens(body: Uint8Array, phrases: readonly string[]): boolean {
  reset();
  const { edges, instPos, instPhrase, firsts } = out;
  const n = body.length;
  let count = 0;
  let inToken = 0;
  let high = 0;
  for (let i = 0; i < n; i++) {
    const c = body[i] as number;
    high |= c;
    const t = IN_TOKEN[c] as number;
    edges[count] = i;
    count += t ^ inToken;
    inToken = t;
  }
  if (high >= 0x80) return false;
  if (inToken === 1) edges[count++] = n;
  const size = count >> 1;
  // Bit k set when a phrase has k code units (bit 31: 31 or more): most tokens are no phrase's length.
  let lengths = 0;
  for (const w of phrases) lengths |= 1 << Math.min(w.length, 31);
  for (let k = 0; k < size; k++) {
    const start = edges[2 * k] as number;
    if (k === 0 || sentenceAfter(body, start)) firsts.push(k);
    const length = (edges[2 * k + 1] as number) - start;
    if (((lengths >>> Math.min(length, 31)) & 1) === 0) continue;
    for (let p = 0; p < phrases.length; p++) {
      const w = phrases[p] as string;
      if (w.length === length && foldedEquals(body, start, w)) {
        instPos.push(k);
        instPhrase.push(p);
      }
    }
  }
  out.size = size;
  return true;
}

/** fts5SentenceFinderCb on bytes: whether whitespace, after a '.' or ':', comes right before `start` (a token's, not the first). */
function sentenceAfter(body: Uint8Array, start: number): boolean {
  let i = start - 1;
  let c = body[i] as number;
  if (c !== SPACE && c !== TAB && c !== LF && c !== CR) return false;
  do c = body[--i] as number;
  while (c === SPACE || c === TAB || c === LF || c === CR);
  return c === STOP || c === COLON;
}

/** Whether the ASCII token at `start` folds to `w` (of its length). */
function foldedEquals(body: Uint8Array, start: number, w: string): boolean {
  for (let k = 0; k < w.length; k++) if (FOLDED[body[start + k] as number] !== w.charCodeAt(k)) return false;
  return true;
}

/** Any body: the tokenizer's own pass, and the sentence rule looked up behind each token. */
function generalTokens(body: string, phrases: readonly string[]): void {
  reset();
  const { instPos, instPhrase, firsts } = out;
  tokenizeFor(body, phrases, (term, start, end) => {
    const pos = out.size++;
    if (pos === 0 || sentenceStartsAt(body, start)) firsts.push(pos);
    out.edges[2 * pos] = start;
    out.edges[2 * pos + 1] = end;
    if (term === '') return;
    for (let p = 0; p < phrases.length; p++) {
      if (phrases[p] === term) {
        instPos.push(pos);
        instPhrase.push(p);
      }
    }
  });
}

/** fts5SentenceFinderCb: a token after whitespace that follows a '.' or ':' starts a sentence. */
function sentenceStartsAt(body: string, start: number): boolean {
  let i = start - 1;
  let c = '';
  for (; i >= 0; i--) {
    c = body[i] as string;
    if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') break;
  }
  return i !== start - 1 && (c === '.' || c === ':');
}
