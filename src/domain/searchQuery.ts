import type { SearchTerm, SearchTerms } from '../storage/search/matchExpression.js';
import { InvalidInput } from './errors.js';

export const MAX_QUERY_LENGTH = 500;
/** Terms per query: each is a lookup in the index, so their number bounds the work of a query. */
export const MAX_TERMS = 16;
/** Letters before `*`: a shorter prefix would match most of the vocabulary. */
export const MIN_PREFIX_LENGTH = 2;

/** A term carries something to search for only if it has a letter or a digit (the index keeps nothing else). */
const SEARCHABLE = /[\p{L}\p{N}]/u;

/**
 * Parses `q`: words, `"exact phrases"`, `-excluded` words or phrases, and
 * `prefix*` words. Everything else is text to search for: no operator a
 * client did not mean. Refuses (400) what cannot be answered sensibly: no word
 * to look for, an unclosed quote, too many terms, a prefix too short.
 */
export function parseSearchQuery(q: string): SearchTerms {
  // Control characters (a NUL would end the string where SQLite reads it) separate words, like spaces.
  const text = q.normalize('NFC').replace(/\p{Cc}/gu, ' ');
  if (text.trim().length === 0) throw new InvalidInput({ reason: 'q must not be empty' });
  if ([...text].length > MAX_QUERY_LENGTH) throw new InvalidInput({ reason: `q must be at most ${MAX_QUERY_LENGTH} characters` });
  if ((text.match(/"/g) ?? []).length % 2 === 1) throw new InvalidInput({ reason: 'q has an unclosed quote (")' });

  const include: SearchTerm[] = [];
  const exclude: SearchTerm[] = [];
  // A token: an optional "-", then a quoted phrase or a run of non-space characters.
  const token = /(-?)(?:"([^"]*)"|([^\s"]+))/gu;
  for (const m of text.matchAll(token)) {
    const negated = m[1] === '-';
    const phrase = m[2];
    let word = m[3];
    let prefix = false;
    if (word !== undefined && word.endsWith('*')) {
      word = word.replace(/\*+$/u, '');
      prefix = true;
    }
    const body = (phrase ?? word ?? '').trim();
    if (!SEARCHABLE.test(body)) continue;
    if (prefix && [...body.replace(/[^\p{L}\p{N}]/gu, '')].length < MIN_PREFIX_LENGTH) {
      throw new InvalidInput({ reason: `a prefix search needs at least ${MIN_PREFIX_LENGTH} letters before "*"` });
    }
    (negated ? exclude : include).push({ text: body, prefix });
  }
  if (include.length + exclude.length > MAX_TERMS) throw new InvalidInput({ reason: `q may hold at most ${MAX_TERMS} words or phrases` });
  if (include.length === 0) {
    throw new InvalidInput({
      reason: exclude.length > 0 ? 'q must hold a word to search for, not only exclusions' : 'q must hold a word to search for (letters or digits)',
    });
  }
  return { include, exclude };
}
