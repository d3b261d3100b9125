import { ASCII_KINDS, ASCII_SPLITS_ALONE, tokenizeFor } from './unicode61.js';

/**
 * A body's tokens as a snippet scores and marks them (ftsSnippet.ts): where each token lies, which of the
 * query's phrases each matches (its instances, in FTS5's order: by position, then by phrase), and which
 * tokens start a sentence (fts5SentenceFinderCb). Valid until the next call: the arrays are reused, since a
 * page's ten snippets would otherwise allocate two arrays of every token ten times.
 */
export interface SnippetTokens {
  size: number;
  /** UTF-16 offsets of token k, [starts[k], ends[k]), for k < size. */
  starts: Int32Array;
  ends: Int32Array;
  instPos: number[];
  instPhrase: number[];
  /** The positions of tokens that start a sentence, ascending; the first token always. */
  firsts: number[];
}

const out: SnippetTokens = { size: 0, starts: new Int32Array(1024), ends: new Int32Array(1024), instPos: [], instPhrase: [], firsts: [] };

/** The tokens of `body` against `phrases` (folded tokens), by the tokenizer. */
export function snippetTokens(body: string, phrases: readonly string[]): SnippetTokens {
  makeRoom(body.length);
  generalTokens(body, phrases);
  return out;
}

/**
 * The tokens of a stored body given as its UTF-8 bytes, scanned as bytes when they are all ASCII (then each byte
 * is a code unit of the text, at the same offset), or null: the caller reads the text and calls `snippetTokens`.
 * A pass over bytes costs half what one over the string's code units does (measured), and the body need not be
 * decoded but for the window it shows.
 */
export function asciiSnippetTokens(bytes: Uint8Array, phrases: readonly string[]): SnippetTokens | null {
  if (!ASCII_SPLITS_ALONE) return null;
  makeRoom(bytes.length);
  return asciiTokens(bytes, phrases) ? out : null;
}

/** At most one token per two code units (a token and its separator), plus one. */
function makeRoom(units: number): void {
  const room = (units >> 1) + 1;
  if (out.starts.length < room) {
    out.starts = new Int32Array(room);
    out.ends = new Int32Array(room);
  }
}

function reset(): void {
  out.size = 0;
  out.instPos.length = 0;
  out.instPhrase.length = 0;
  out.firsts.length = 0;
}

/** Whitespace as fts5SentenceFinderCb skips it, and the two marks that end a sentence before it. */
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const STOP = 0x2e;
const COLON = 0x3a;
const UPPER = 2;

/**
 * One pass over a body's bytes, no string built: false (and `out` not to be used) at the first byte outside
 * ASCII. A separator ends a token, anything else continues it (ASCII_SPLITS_ALONE: no ASCII code
 * point is a diacritic or folds other than as `toLowerCase` does); a token is compared with each phrase of
 * its length as it folds. `stop` follows fts5SentenceFinderCb without looking back: 1 after a '.' or ':',
 * 2 once whitespace follows it, 0 after anything else; a token met at 2 starts a sentence.
 */
function asciiTokens(body: Uint8Array, phrases: readonly string[]): boolean {
  reset();
  const { starts, ends, instPos, instPhrase, firsts } = out;
  // A local: an imported binding is read again at every use, in the loop too.
  const kinds = ASCII_KINDS;
  const n = body.length;
  // Bit k set when a phrase has k code units (bit 31: 31 or more): most tokens are no phrase's length, and are
  // passed by one test.
  let lengths = 0;
  for (const w of phrases) lengths |= 1 << Math.min(w.length, 31);
  let size = 0;
  let stop = 0;
  let i = 0;
  while (i < n) {
    let c = body[i] as number;
    if (c >= 0x80) return false;
    if (kinds[c] === 0) {
      if (c === STOP || c === COLON) stop = 1;
      else if (c === SPACE || c === TAB || c === LF || c === CR) {
        if (stop !== 0) stop = 2;
      } else stop = 0;
      i++;
      continue;
    }
    if (size === 0 || stop === 2) firsts.push(size);
    stop = 0;
    const start = i;
    let folds = kinds[c] === UPPER;
    for (i++; i < n; i++) {
      c = body[i] as number;
      if (c >= 0x80) return false;
      const kind = kinds[c] as number;
      if (kind === 0) break;
      if (kind === UPPER) folds = true;
    }
    starts[size] = start;
    ends[size] = i;
    if (((lengths >>> Math.min(i - start, 31)) & 1) === 0) {
      size++;
      continue;
    }
    for (let p = 0; p < phrases.length; p++) {
      const w = phrases[p] as string;
      if (w.length === i - start && equalsFolded(body, start, w, folds)) {
        instPos.push(size);
        instPhrase.push(p);
      }
    }
    size++;
  }
  out.size = size;
  return true;
}

/** Whether the ASCII token at `start` is `w` (of its length), upper case letters lowered when the token has any. */
function equalsFolded(body: Uint8Array, start: number, w: string, folds: boolean): boolean {
  for (let k = 0; k < w.length; k++) {
    const c = body[start + k] as number;
    if ((folds && ASCII_KINDS[c] === UPPER ? c + 0x20 : c) !== w.charCodeAt(k)) return false;
  }
  return true;
}

/** Any body: the tokenizer's own pass, and the sentence rule looked up behind each token. */
function generalTokens(body: string, phrases: readonly string[]): void {
  reset();
  const { instPos, instPhrase, firsts } = out;
  tokenizeFor(body, phrases, (term, start, end) => {
    const pos = out.size++;
    if (pos === 0 || sentenceStartsAt(body, start)) firsts.push(pos);
    out.starts[pos] = start;
    out.ends[pos] = end;
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
