import { randomBytes } from 'node:crypto';
import { errnoCode } from '../../common/errors.js';
import { fsyncDir } from '../fs/durable.js';
import type { FileHandleLike, FsPromises } from '../fs/fs.js';
import { blobObject, commitObject, gitObject, inTreeOrderOf, type GitObject, type Signature, type TreeEntry } from './objectFormat.js';
import { buildPack, type BuiltPack, type PackDelta } from './packFile.js';
import { editedTree, treeBytes } from './treeBytes.js';

/**
 * Longest chain of deltas a tree may end: git's own default (`pack.depth`). Every read of
 * the last version applies the whole chain; a longer batch starts a new chain with a whole tree.
 */
export const MAX_DELTA_DEPTH = 50;


/** What one flush put on disk. */
export interface FlushReport {
  objects: number;
  /** Packs written: 1, or 0 when nothing was staged. */
  packs: number;
  /**
   * The folder of each tree written (by id; '' for the root): what C git's own walk would name it,
   * so that a roll-up of these packs (`packRollup.ts`) can hand git the names instead of a walk.
   */
  names: ReadonlyMap<string, string>;
}

/**
 * Collects the objects of one or more commits in memory, then writes them all
 * durably in one flush.
 *
 * A flush writes a single pack and its index, however many commits the batch
 * holds: temp files -> fsync (the two side by side) -> rename (pack first, so a
 * reader that finds the index finds its pack) -> fsync of `objects/pack`. Two
 * rounds of fsyncs per group commit, where loose objects cost one per object.
 * Temp files are named `tmp_pack_*` / `tmp_idx_*`, as C git names its own,
 * which `git fsck` ignores; a failed flush removes them.
 */
export class ObjectStager {
  private readonly objects = new Map<string, GitObject>();
  /** The trees staged in the open batch (a later version of one is written as a delta of it): deltas between each and a whole object. */
  private readonly trees = new Map<string, number>();
  private readonly deltas = new Map<string, PackDelta>();
  private sealed: BuiltPack | null = null;
  /** Trees' folders (see FlushReport.names), for the staged objects, sealed or not. */
  private names = new Map<string, string>();
  /** Objects in the sealed pack. */
  private count = 0;

  /** Objects staged (sealed or not) and not yet flushed. */
  get size(): number {
    return this.objects.size + this.count;
  }

  writeBlob(content: Uint8Array): string {
    return this.stage(blobObject(content));
  }

  /**
   * `previous`: the tree this one is a new version of, and its entries; `entries` are then in git's
   * tree order (the tree editor keeps them so) and share every unchanged entry object with it, and
   * the tree is built from the previous one's bytes (see `editedTree`). If that is staged in the
   * same batch, this one goes in the pack as a delta of it, when that is smaller and the chain not
   * too long; its id is still that of the whole tree.
   */
  writeTree(entries: readonly TreeEntry[], previous?: { oid: string; entries: readonly TreeEntry[] } | null, folder?: string): string {
    const oid = this.stageTree(entries, previous);
    if (folder !== undefined) this.names.set(oid, folder);
    return oid;
  }

  private stageTree(entries: readonly TreeEntry[], previous?: { oid: string; entries: readonly TreeEntry[] } | null): string {
    if (!previous) {
      const object = gitObject('tree', treeBytes(inTreeOrderOf(entries)).body);
      if (!this.objects.has(object.oid)) this.trees.set(object.oid, 0);
      return this.stage(object);
    }
    const baseDepth = this.trees.get(previous.oid);
    const { object, delta } = editedTree(previous.entries, entries, baseDepth !== undefined && baseDepth < MAX_DELTA_DEPTH);
    if (this.objects.has(object.oid)) return object.oid;
    let depth = 0;
    if (delta && delta.byteLength < object.body.byteLength) {
      this.deltas.set(object.oid, { base: previous.oid, data: delta });
      depth = (baseDepth as number) + 1;
    }
    this.trees.set(object.oid, depth);
    return this.stage(object);
  }

  writeCommit(args: { tree: string; parents: string[]; author: Signature; message: string }): string {
    return this.stage(commitObject(args));
  }

  /** An object staged twice (same id, same bytes) keeps its first place: a delta's base must come before it. */
  private stage(object: GitObject): string {
    if (!this.objects.has(object.oid)) this.objects.set(object.oid, object);
    return object.oid;
  }

  /**
   * Encodes the staged objects as a pack in memory (the CPU part of a flush),
   * so the write queue can do it while the batch before is still being fsynced.
   */
  seal(): void {
    if (this.objects.size === 0) return;
    this.sealed = buildPack([...this.objects.values()], this.deltas);
    this.count = this.objects.size;
    this.objects.clear();
    // The sealed pack is closed to later versions: a delta's base must be in its own pack.
    this.trees.clear();
    this.deltas.clear();
  }

  /**
   * Writes every staged object into `gitdir` as one durable pack. `whileSyncing` is called once the
   * pack's fsync is under way (on libuv's pool, the event loop free): work started there overlaps
   * the wait for the disk instead of following it.
   */
  async flush(fs: FsPromises, gitdir: string, opts: { whileSyncing?: () => void } = {}): Promise<FlushReport> {
    this.seal();
    const sealed = this.sealed;
    const objects = this.count;
    const names = this.names;
    this.sealed = null;
    this.count = 0;
    this.names = new Map();
    if (!sealed) return { objects: 0, packs: 0, names };
    const { checksum, pack, idx } = sealed;
    const dir = `${gitdir}/objects/pack`;
    const suffix = randomBytes(8).toString('hex');
    const temps = [`${dir}/tmp_pack_${suffix}`, `${dir}/tmp_idx_${suffix}`];
    const packPath = `${dir}/pack-${checksum}.pack`;
    // Pack and index are written and fsynced side by side (one wait for the disk, not two): neither
    // is visible before both are durable, as the renames come after.
    const writeBoth = async (): Promise<void> => {
      const written = await Promise.allSettled([writeReadOnly(fs, temps[0] as string, pack, opts.whileSyncing), writeReadOnly(fs, temps[1] as string, idx)]);
      for (const w of written) if (w.status === 'rejected') throw w.reason;
    };
    try {
      try {
        await writeBoth();
      } catch (err) {
        // objects/pack is made once, on the first flush that finds it missing (not tried on every flush).
        if (errnoCode(err) !== 'ENOENT') throw err;
        await Promise.all(temps.map((t) => fs.unlink(t).catch(() => undefined)));
        await fs.mkdir(dir, { recursive: true });
        await fsyncDir(fs, `${gitdir}/objects`);
        await writeBoth();
      }
      await fs.rename(temps[0] as string, packPath);
      temps[0] = packPath;
      await fs.rename(temps[1] as string, `${dir}/pack-${checksum}.idx`);
    } catch (err) {
      // Most likely a full disk: half-written files would only hold on to the space, and a pack
      // without its index is garbage to git.
      await Promise.all(temps.map((t) => fs.unlink(t).catch(() => undefined)));
      throw err;
    }
    await fsyncDir(fs, dir);
    return { objects, packs: 1, names };
  }
}

/** Creates `path` with `data`, read-only as git leaves its packs, and returns once it is on disk. */
async function writeReadOnly(fs: FsPromises, path: string, data: Uint8Array, whileSyncing?: () => void): Promise<void> {
  const handle: FileHandleLike = await fs.open(path, 'wx', 0o644);
  try {
    await handle.write(data);
    // Set on the handle: some file systems refuse writes through a 0444 create.
    await handle.chmod(0o444);
    const syncing = handle.sync();
    try {
      whileSyncing?.();
    } finally {
      await syncing;
    }
  } finally {
    await handle.close();
  }
}
