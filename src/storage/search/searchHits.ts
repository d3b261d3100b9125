import type { IndexEntry } from '../repo/itemIndex.js';

/** What a query's hits are cut to and looked in: snippets clipped, folder prefixes as ranges of paths. */

export interface SearchHit {
  entry: IndexEntry;
  score: number;
  snippet: string;
}

/**
 * A row's score from FTS5's bm25 (negative, lower is better; either engine computes it the same): 1 for a match
 * in the path, plus the relevance mapped to (0, 1), higher is better. One definition, so the engines cannot drift.
 */
export function scoreOf(inPath: number, bm25: number): number {
  const relevance = Math.max(0, -bm25);
  return inPath + relevance / (1 + relevance);
}

/** Either engine's rows as hits: each with its live item, its score rounded to 1e-6, its snippet clipped. */
export function hitsOf(rows: ReadonlyArray<{ path: string; score: number; snippet: string }>, source: { get(path: string): IndexEntry | undefined }): SearchHit[] {
  const hits: SearchHit[] = [];
  for (const row of rows) {
    const entry = source.get(row.path);
    // The index and the repository change together; a row without a live item would be a bug, never shown.
    if (!entry || entry.record.deletedAt !== null) continue;
    hits.push({ entry, score: Math.round(row.score * 1e6) / 1e6, snippet: clip(row.snippet) });
  }
  return hits;
}

/** The longest snippet handed out, in characters. */
export const MAX_SNIPPET_CHARS = 300;

/** The paths under a folder prefix ("a/b/") as a range of strings: [prefix, prefix with its last "/" raised by one). */
export function prefixRange(prefix: string): { from: string; to: string } {
  return { from: prefix, to: `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}` };
}

/** At most MAX_SNIPPET_CHARS characters, never cutting a marker pair in two. */
export function clip(snippet: string): string {
  if (snippet.length <= MAX_SNIPPET_CHARS) return snippet;
  let out = snippet.slice(0, MAX_SNIPPET_CHARS - 1);
  // An opened « whose » was cut off is closed, so the marks always pair up.
  if (out.lastIndexOf('«') > out.lastIndexOf('»')) out = `${out.slice(0, MAX_SNIPPET_CHARS - 2)}»`;
  return `${out}…`;
}
