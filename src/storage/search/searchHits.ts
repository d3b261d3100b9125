/** What a query's hits are cut to and looked in: snippets clipped, folder prefixes as ranges of paths. */

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
