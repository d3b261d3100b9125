/**
 * A search as the storage layer takes it: terms already parsed and checked by
 * the domain (see domain/searchQuery.ts), never the client's raw text. Each
 * term is passed to FTS5 as a quoted string, so nothing a client types can be
 * read as FTS5 syntax (column filters, NEAR, operators).
 */
export interface SearchTerm {
  /** The words of the term: one for a word or a prefix, several for a phrase. */
  text: string;
  /** `word*`: any word starting with `text`. */
  prefix: boolean;
}

export interface SearchTerms {
  /** All must match (in the path or the content). At least one. */
  include: readonly SearchTerm[];
  /** None may match. */
  exclude: readonly SearchTerm[];
}

const quote = (term: SearchTerm): string => `"${term.text.replaceAll('"', '""')}"${term.prefix ? ' *' : ''}`;

/** The FTS5 MATCH expression: every included term, and none of the excluded ones. */
export function matchExpression(terms: SearchTerms): string {
  const all = terms.include.map(quote).join(' AND ');
  if (terms.exclude.length === 0) return all;
  return `(${all}) NOT (${terms.exclude.map(quote).join(' OR ')})`;
}

/** The expression, over the index of paths alone, that says whether any included term is in the path (path matches rank first). */
export function pathMatchExpression(terms: SearchTerms): string {
  return terms.include.map(quote).join(' OR ');
}
