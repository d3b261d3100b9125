import git from 'isomorphic-git';
import { mapLimit } from './durable.js';
import type { FsPromises } from './fs.js';
import type { TreeEntry } from './objectStager.js';

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

/** Reads a tree's entries straight from the repository (for callers without a tree cache). */
export function treeReader(fs: FsPromises, gitdir: string, cache: object = {}): (oid: string) => Promise<TreeEntry[]> {
  return async (oid) => (await git.readTree({ fs: { promises: fs }, gitdir, oid, cache })).tree as TreeEntry[];
}
