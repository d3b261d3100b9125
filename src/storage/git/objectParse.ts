import type { TreeEntry } from './objectFormat.js';

/** A commit as the store reads it: tree, parents, author (name, email, whole seconds) and message. */
export interface ParsedCommit {
  tree: string;
  parents: string[];
  author: { name: string; email: string; timestamp: number };
  /** After the headers; normalized as isomorphic-git did (no CR, no leading blank lines, one trailing newline). */
  message: string;
}

/**
 * Tree entries in stored order. Modes are given as isomorphic-git gave them (folders "040000";
 * 1006xx, 1007xx, 120xxx and 160xxx as the mode git means), so the callers, and tree ids the
 * tree editor writes back, are unchanged by the switch of reader. `null` when the bytes are not a tree.
 */
export function parseTree(body: Buffer): TreeEntry[] | null {
  const entries: TreeEntry[] = [];
  let at = 0;
  while (at < body.byteLength) {
    const space = body.indexOf(0x20, at);
    const nul = body.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > body.byteLength) return null;
    const mode = normalMode(body.toString('latin1', at, space));
    if (!mode) return null;
    entries.push({
      mode,
      path: body.toString('utf8', space + 1, nul),
      oid: body.toString('hex', nul + 1, nul + 21),
      type: mode === '040000' ? 'tree' : mode === '160000' ? 'commit' : 'blob',
    });
    at = nul + 21;
  }
  return entries;
}

function normalMode(raw: string): string | undefined {
  if (/^0?4/.test(raw)) return '040000';
  if (raw.startsWith('1006')) return '100644';
  if (raw.startsWith('1007')) return '100755';
  if (raw.startsWith('120')) return '120000';
  if (raw.startsWith('160')) return '160000';
  return undefined;
}

/** `null` when the bytes are not a commit (no tree, or an author line git would not write). */
export function parseCommit(body: Buffer): ParsedCommit | null {
  const text = body.toString('utf8');
  const split = text.indexOf('\n\n');
  const headers = (split < 0 ? text : text.slice(0, split)).split('\n');
  let tree: string | undefined;
  const parents: string[] = [];
  let author: ParsedCommit['author'] | undefined;
  for (const line of headers) {
    if (line.startsWith('tree ')) tree ??= line.slice(5);
    else if (line.startsWith('parent ')) parents.push(line.slice(7));
    else if (line.startsWith('author ')) {
      const m = /^(.*) <(.*)> (.*) (.*)$/.exec(line.slice(7));
      if (!m) return null;
      author = { name: m[1] as string, email: m[2] as string, timestamp: Number(m[3]) };
    }
  }
  if (!tree || !author) return null;
  const message = split < 0 ? '' : text.slice(split + 2);
  return { tree, parents, author, message: `${message.replace(/\r/g, '').replace(/^\n+/, '').replace(/\n+$/, '')}\n` };
}
