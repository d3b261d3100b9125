import { ancestorFolders } from '../../domain/paths.js';

/** The folder tree of item paths, and filtering them. Pure: no DOM. */
export interface TreeFolder {
  name: string;
  /** '' for the root, else `a/b`. */
  path: string;
  folders: TreeFolder[];
  items: { name: string; path: string }[];
  /** Items in this folder and below. */
  count: number;
}

/** Builds the tree; folders and items each sorted by name, folders first. */
export function buildTree(paths: string[]): TreeFolder {
  const root: TreeFolder = { name: '', path: '', folders: [], items: [], count: 0 };
  const byPath = new Map<string, TreeFolder>([['', root]]);
  const folderOf = (path: string): TreeFolder => {
    let folder = byPath.get(path);
    if (!folder) {
      const slash = path.lastIndexOf('/');
      const parent = folderOf(slash < 0 ? '' : path.slice(0, slash));
      folder = { name: path.slice(slash + 1), path, folders: [], items: [], count: 0 };
      parent.folders.push(folder);
      byPath.set(path, folder);
    }
    return folder;
  };
  for (const path of paths) {
    const slash = path.lastIndexOf('/');
    const folderPath = slash < 0 ? '' : path.slice(0, slash);
    folderOf(folderPath).items.push({ name: path.slice(slash + 1), path });
    for (const f of ['', ...ancestorFolders(path)]) (byPath.get(f) as TreeFolder).count++;
  }
  const sort = (folder: TreeFolder): void => {
    folder.folders.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    folder.items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    folder.folders.forEach(sort);
  };
  sort(root);
  return root;
}

/** Paths containing every word of the filter (case-insensitive). */
export function filterPaths(paths: string[], filter: string): string[] {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  return words.length === 0 ? paths : paths.filter((p) => words.every((w) => p.toLowerCase().includes(w)));
}
