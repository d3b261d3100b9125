import { mapLimit } from '../fs/durable.js';
import type { TreeEntry } from './objectFormat.js';

/** Every file of a tree, by full path -> blob id. Reads each tree once, several at a time. */
export async function listTreeFiles(args: {
  tree: string;
  readTree: (oid: string) => Promise<readonly TreeEntry[]>;
}): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (oid: string, prefix: string): Promise<void> => {
    const subtrees: TreeEntry[] = [];
    for (const e of await args.readTree(oid)) {
      if (e.type === 'blob') files.set(`${prefix}${e.path}`, e.oid);
      else if (e.type === 'tree') subtrees.push(e);
    }
    await mapLimit(subtrees, 8, (e) => walk(e.oid, `${prefix}${e.path}/`));
  };
  await walk(args.tree, '');
  return files;
}

/**
 * The files that differ between two trees (added, changed or removed), by full
 * path. Subtrees with the same id are skipped unread, so the cost follows the
 * size of the change, not of the repository.
 */
export async function diffTreeFiles(args: {
  from: string;
  to: string;
  readTree: (oid: string) => Promise<readonly TreeEntry[]>;
}): Promise<Set<string>> {
  const changed = new Set<string>();
  const walk = async (from: string | null, to: string | null, prefix: string): Promise<void> => {
    if (from === to) return;
    const before = new Map((from ? await args.readTree(from) : []).map((e) => [e.path, e]));
    const after = new Map((to ? await args.readTree(to) : []).map((e) => [e.path, e]));
    const subtrees: Array<[string | null, string | null, string]> = [];
    for (const name of new Set([...before.keys(), ...after.keys()])) {
      const a = before.get(name);
      const b = after.get(name);
      if (a?.oid === b?.oid && a?.type === b?.type) continue;
      const treeOf = (e: TreeEntry | undefined): string | null => (e?.type === 'tree' ? e.oid : null);
      // A file on either side changed (a file that became a folder, or back, is both).
      if (a?.type === 'blob' || b?.type === 'blob') changed.add(`${prefix}${name}`);
      if (treeOf(a) !== treeOf(b)) subtrees.push([treeOf(a), treeOf(b), `${prefix}${name}/`]);
    }
    await mapLimit(subtrees, 8, ([x, y, p]) => walk(x, y, p));
  };
  await walk(args.from, args.to, '');
  return changed;
}
