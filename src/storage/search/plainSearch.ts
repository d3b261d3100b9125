import { snippetOf, snippetOfStored } from './ftsSnippet.js';
import type { SearchTerms } from './matchExpression.js';
import type { RankIndex } from './rankIndex.js';
import { rankPlain, type RankedRow } from './rankQuery.js';
import { tokensOf } from './unicode61.js';

/** A query's terms as single tokens, or null when one is not a plain word (a phrase, a prefix, or no token at all). */
export function plainTerms(terms: SearchTerms): { include: string[]; exclude: string[] } | null {
  // No included term is no query the domain sends: FTS5 answers it as it always did (with an error).
  if (terms.include.length === 0) return null;
  const one = (t: { text: string; prefix: boolean }): string | null => {
    if (t.prefix) return null;
    const tokens = tokensOf(t.text);
    return tokens.length === 1 ? (tokens[0] as string) : null;
  };
  const include = terms.include.map(one);
  const exclude = terms.exclude.map(one);
  if (include.some((t) => t === null) || exclude.some((t) => t === null)) return null;
  return { include: include as string[], exclude: exclude as string[] };
}

/**
 * The page and the snippets of its first `snippets` hits from the in-memory engine. `bodies` reads rows' stored
 * content as UTF-8 bytes, all the page's at once; `body` one row's as text, for a body that is not ASCII.
 */
export function plainSearch(args: {
  rank: RankIndex;
  plain: { include: string[]; exclude: string[] };
  needs: readonly number[];
  ranges?: ReadonlyArray<{ from: string; to: string }>;
  limit: number;
  offset: number;
  snippets: number;
  bodies: (ids: readonly number[]) => ReadonlyMap<number, Uint8Array>;
  body: (id: number) => string;
}): Array<RankedRow & { snippet: string }> {
  const rows = rankPlain(args.rank, { ...args.plain, needs: args.needs, ranges: args.ranges, limit: args.limit, offset: args.offset });
  const shown = rows.slice(0, args.snippets);
  const stored = shown.length > 0 ? args.bodies(shown.map((row) => row.id)) : new Map<number, Uint8Array>();
  const snippet = (id: number): string => {
    const bytes = stored.get(id);
    return bytes ? snippetOfStored(bytes, () => args.body(id), args.plain.include) : snippetOf(args.body(id), args.plain.include);
  };
  return rows.map((row, i) => ({ ...row, snippet: i < args.snippets ? snippet(row.id) : '' }));
}
