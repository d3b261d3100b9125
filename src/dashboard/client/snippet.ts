/** A search snippet split for display. Pure: no DOM. */
export interface SnippetPart {
  text: string;
  /** A match the server marked: shown as <mark>. */
  marked: boolean;
}

/**
 * A match as the server marks it: « then the matched text then » (SQLite's
 * snippet(), src/storage/search/searchDb.ts). A match is made of words, so it
 * never holds « or » itself; a « or » that does not enclose such text came from
 * the content (or from a cut at the snippet's end) and stays text.
 */
const MARK = /«([^«»]+)»/gu;

/**
 * Splits a snippet into plain and marked parts, in order, without the marker
 * characters. The parts are text for text nodes, never HTML: the snippet is
 * the item's content, which is untrusted.
 */
export function snippetParts(snippet: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  let at = 0;
  for (const m of snippet.matchAll(MARK)) {
    if (m.index > at) parts.push({ text: snippet.slice(at, m.index), marked: false });
    parts.push({ text: m[1] as string, marked: true });
    at = m.index + m[0].length;
  }
  if (at < snippet.length) parts.push({ text: snippet.slice(at), marked: false });
  return parts;
}
