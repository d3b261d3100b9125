import { Lru } from './lru.js';
import type { ObjectStager, TreeEntry } from './objectStager.js';

/** One file in a commit: a blob id to place at `path`, or null to remove it. */
export interface TreeChange {
  path: string;
  oid: string | null;
}

interface Dir {
  kind: 'dir';
  children: Map<string, Dir | Leaf>;
}
interface Leaf {
  kind: 'leaf';
  oid: string | null;
}

export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/**
 * Builds the root tree of a new commit by rewriting only the trees on the
 * changed paths (design.md, storage rule 1): a write costs the depth of the
 * path times the size of the folders on it, never the size of the repository.
 * Trees it reads or writes are remembered by id, so a burst of commits to the
 * same folders reads nothing from disk, and nothing it has not yet flushed.
 */
export class TreeEditor {
  private readonly cache = new Lru<string, readonly TreeEntry[]>(50_000, (entries) => 1 + entries.length);

  constructor(private readonly readTree: (oid: string) => Promise<TreeEntry[]>) {}

  async entries(oid: string): Promise<readonly TreeEntry[]> {
    if (oid === EMPTY_TREE) return [];
    const hit = this.cache.get(oid);
    if (hit) return hit;
    const entries = await this.readTree(oid);
    this.cache.set(oid, entries);
    return entries;
  }

  /** Returns the id of the root tree after `changes` are applied to `root` (null: no tree yet). */
  async apply(root: string | null, changes: readonly TreeChange[], stager: ObjectStager): Promise<string> {
    const top: Dir = { kind: 'dir', children: new Map() };
    for (const change of changes) {
      const parts = change.path.split('/');
      let dir = top;
      for (const part of parts.slice(0, -1)) {
        let next = dir.children.get(part);
        if (!next || next.kind !== 'dir') {
          next = { kind: 'dir', children: new Map() };
          dir.children.set(part, next);
        }
        dir = next;
      }
      dir.children.set(parts[parts.length - 1] as string, { kind: 'leaf', oid: change.oid });
    }
    return (await this.rewrite(root, top, stager, '')) ?? this.write([], stager);
  }

  private async rewrite(oid: string | null, dir: Dir, stager: ObjectStager, where: string): Promise<string | null> {
    const entries = new Map((oid ? await this.entries(oid) : []).map((e) => [e.path, e]));
    for (const [name, change] of dir.children) {
      const existing = entries.get(name);
      if (change.kind === 'leaf') {
        if (existing && existing.type !== 'blob') throw new Error(`cannot place a file at ${where}${name}: it is a folder`);
        if (change.oid === null) entries.delete(name);
        else entries.set(name, { mode: '100644', path: name, oid: change.oid, type: 'blob' });
      } else {
        if (existing && existing.type !== 'tree') throw new Error(`cannot use ${where}${name} as a folder: it is a file`);
        const sub = await this.rewrite(existing?.oid ?? null, change, stager, `${where}${name}/`);
        if (sub === null) entries.delete(name);
        else entries.set(name, { mode: '040000', path: name, oid: sub, type: 'tree' });
      }
    }
    // Git has no empty folders: a folder whose last file left disappears from its parent.
    if (entries.size === 0) return null;
    return this.write([...entries.values()], stager);
  }

  private write(entries: TreeEntry[], stager: ObjectStager): string {
    const oid = stager.writeTree(entries);
    this.cache.set(oid, entries);
    return oid;
  }
}
