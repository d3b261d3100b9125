import { Lru } from '../../common/lru.js';
import { compareTreeEntries } from './objectFormat.js';
import type { TreeEntry } from './objectFormat.js';
import type { ObjectStager } from './objectStager.js';

/** One file in a commit: a blob id to place at `path`, or null to remove it. */
export interface TreeChange {
  path: string;
  oid: string | null;
}

/**
 * `replacing`: the earlier changes of the same `apply` at this name, of the other kind (a file
 * removed, then a folder made there, or a folder emptied, then a file put there: one commit of several
 * items, POST /commits). The name may change kind only where those changes empty it in the base tree;
 * anything else at it is refused, never dropped.
 */
interface Dir {
  kind: 'dir';
  children: Map<string, Dir | Leaf>;
  replacing?: Leaf;
}
interface Leaf {
  kind: 'leaf';
  oid: string | null;
  replacing?: Dir;
}

export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/**
 * Builds the root tree of a new commit by rewriting only the trees on the
 * changed paths: a write costs the depth of the
 * path times the size of the folders on it, never the size of the repository.
 * Trees it reads or writes are remembered by id, so a burst of commits to the
 * same folders reads nothing from disk, and nothing it has not yet flushed.
 */
export class TreeEditor {
  private readonly cache: Lru<string, readonly TreeEntry[]>;
  /**
   * The trees written through the two latest stagers (one per batch): perhaps not on disk yet, since
   * one batch is flushed while the next is built. A batch is built only once the one two before it
   * is over, so a tree written before these is on disk.
   */
  private readonly recent: Array<{ stager: ObjectStager; oids: Set<string>; replaced: string[] }> = [];

  /**
   * `cacheEntries`: the cache's size in entries. 200,000 hold every folder's current tree of a
   * 50,000-item organization (items and records, a thousand per folder) with room to spare, as
   * long as superseded versions leave it (`write`).
   */
  constructor(
    private readonly readTree: (oid: string) => Promise<TreeEntry[]>,
    { cacheEntries = 200_000 }: { cacheEntries?: number } = {},
  ) {
    this.cache = new Lru<string, readonly TreeEntry[]>(cacheEntries, (entries) => 1 + entries.length);
  }

  /** The tree's entries, in git's tree order. */
  async entries(oid: string): Promise<readonly TreeEntry[]> {
    if (oid === EMPTY_TREE) return [];
    const hit = this.cache.get(oid);
    if (hit) return hit;
    // isomorphic-git lists entries by plain name ("a" before "a-b.md"), not in the stored order.
    const entries = (await this.readTree(oid)).sort(compareTreeEntries);
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
          next = { kind: 'dir', children: new Map(), ...(next ? { replacing: next } : {}) };
          dir.children.set(part, next);
        }
        dir = next;
      }
      const name = parts[parts.length - 1] as string;
      const earlier = dir.children.get(name);
      dir.children.set(name, { kind: 'leaf', oid: change.oid, ...(earlier?.kind === 'dir' ? { replacing: earlier } : {}) });
    }
    return (await this.rewrite(root, top, stager, '')) ?? this.write([], stager);
  }

  private async rewrite(oid: string | null, dir: Dir, stager: ObjectStager, where: string): Promise<string | null> {
    // Edited in place, in git's order: a folder of a thousand entries changes by one or two, so
    // finding those beats rebuilding and sorting the whole list on every commit.
    const base = oid ? await this.entries(oid) : [];
    const entries = [...base];
    for (const [name, change] of dir.children) {
      const at = entries.findIndex((e) => e.path === name);
      const existing = at === -1 ? undefined : entries[at];
      let next: TreeEntry | null;
      if (change.kind === 'leaf') {
        if (existing && existing.type !== 'blob') {
          // Only a folder the same apply empties: its rewrite by those changes leaves nothing.
          const emptied = change.replacing !== undefined && (await this.rewrite(existing.oid, change.replacing, stager, `${where}${name}/`)) === null;
          if (!emptied) throw new Error(`cannot place a file at ${where}${name}: it is a folder`);
        }
        next = change.oid === null ? null : { mode: '100644', path: name, oid: change.oid, type: 'blob' };
      } else {
        // Only a file the same apply removes.
        if (existing && existing.type !== 'tree' && change.replacing?.oid !== null) throw new Error(`cannot use ${where}${name} as a folder: it is a file`);
        const sub = await this.rewrite(existing?.type === 'tree' ? existing.oid : null, change, stager, `${where}${name}/`);
        next = sub === null ? null : { mode: '040000', path: name, oid: sub, type: 'tree' };
      }
      if (existing && next && existing.type !== next.type) {
        // Another kind under the same name sorts elsewhere (a folder's name sorts as if it ended in "/").
        entries.splice(at, 1);
        entries.splice(insertionPoint(entries, next), 0, next);
      } else if (existing && next) entries[at] = next; // same name, same kind: same place
      else if (existing) entries.splice(at, 1);
      else if (next) entries.splice(insertionPoint(entries, next), 0, next);
    }
    // Git has no empty folders: a folder whose last file left disappears from its parent.
    if (entries.length === 0) return null;
    // Named as the tree's previous version: built from its bytes, and within a batch stored as a delta of it.
    return this.write(entries, stager, oid ? { oid, entries: base } : null, where.slice(0, -1));
  }

  private write(entries: TreeEntry[], stager: ObjectStager, previous: { oid: string; entries: readonly TreeEntry[] } | null = null, folder = ''): string {
    const batch = this.batchOf(stager);
    const oid = stager.writeTree(entries, previous, folder);
    // The version this one replaces is no longer this folder's tree: kept, it would take the place of a
    // current one, since reading it as the base made it the most recent. At 50,000 items the replaced
    // thousand-entry versions pushed current folders out, and each PUT read, parsed and encoded a whole
    // folder again. One that may not be on disk yet goes two batches later: another folder with the
    // same files (the same id) may still need it, and reading it back would find nothing.
    if (previous && previous.oid !== oid) {
      if (this.mayBeUnflushed(previous.oid)) batch.replaced.push(previous.oid);
      else this.cache.delete(previous.oid);
    }
    this.cache.set(oid, entries);
    batch.oids.add(oid);
    return oid;
  }

  private mayBeUnflushed(oid: string): boolean {
    return this.recent.some((r) => r.oids.has(oid));
  }

  /** The trees `stager`'s batch wrote, and the replaced ones it kept; a third batch retires the oldest. */
  private batchOf(stager: ObjectStager): { oids: Set<string>; replaced: string[] } {
    let latest = this.recent[this.recent.length - 1];
    if (latest?.stager !== stager) {
      latest = { stager, oids: new Set(), replaced: [] };
      this.recent.push(latest);
      const done = this.recent.length > 2 ? this.recent.shift() : undefined;
      for (const old of done?.replaced ?? []) if (!this.mayBeUnflushed(old)) this.cache.delete(old);
    }
    return latest;
  }
}

/** Where `entry` goes in `entries` (in git's tree order), by binary search. */
function insertionPoint(entries: readonly TreeEntry[], entry: TreeEntry): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareTreeEntries(entries[mid] as TreeEntry, entry) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
