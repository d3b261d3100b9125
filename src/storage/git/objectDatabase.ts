import { setImmediate } from 'node:timers/promises';
import { DEFAULT_SHARES } from '../../common/cacheBudget.js';
import { errnoCode } from '../../common/errors.js';
import { CorruptStore } from '../errors.js';
import type { FsPromises } from '../fs/fs.js';
import { Lru } from '../../common/lru.js';
import { applyDelta } from './deltaApply.js';
import { isObjectId, objectIdHash } from './objectFormat.js';
import { readLooseObject } from './looseObject.js';
import { packIndexPaths } from './objectCount.js';
import { PACK_MISMATCH, PackReader, WindowCache, type PackEntry, type StoredType } from './packReader.js';

/** An object as stored: its type and its body (without the `<type> <size>\0` header). */
export interface StoredObject {
  type: StoredType;
  body: Buffer;
}

/** Longer chains than git ever writes (`--depth` 50 by default, 4095 at most) mean a loop in a damaged pack. */
const MAX_CHAIN = 5000;

/** Bodies above this are hashed a slice at a time, the event loop turning between slices. */
const HASH_SLICE_BYTES = 1024 * 1024;

/**
 * The id of a large object (a file item's bytes, up to KNOWLEDGE_MAX_FILE_BYTES), hashed in slices of
 * HASH_SLICE_BYTES (~0.7 ms of SHA-1 each) with a turn of the event loop between them: 25 MiB hashed at once
 * would hold every other request for ~15 ms.
 */
async function idInSlices(object: StoredObject): Promise<string> {
  const { body } = object;
  const hash = objectIdHash(object.type, body.byteLength);
  for (let at = 0; at < body.byteLength; at += HASH_SLICE_BYTES) {
    if (at > 0) await setImmediate();
    hash.update(body.subarray(at, at + HASH_SLICE_BYTES));
  }
  return hash.digest('hex');
}

/**
 * What reads of objects keep: pack windows and resolved delta bases. A server shares one of each among all its
 * repositories, within one budget (common/cacheBudget.ts); a tool that opens one repository gets its own. Each
 * entry is keyed by its pack's opening (`PackReader.key`, unique in the process) and an offset or an object id,
 * so no repository reads another's entries, nor could learn from its own reads' times what another reads.
 */
export interface ObjectCaches {
  windows: WindowCache;
  bases: Lru<string, StoredObject>;
}

/**
 * By default the default budget's shares, 4 MiB each (windows: see `WINDOW_BYTES`; bases: C git's
 * core.deltaBaseCacheLimit is 96 MiB, ours serves small items).
 */
export function objectCaches({ windowBytes = DEFAULT_SHARES.windows, baseBytes = DEFAULT_SHARES.bases }: { windowBytes?: number; baseBytes?: number } = {}): ObjectCaches {
  return { windows: new WindowCache(windowBytes), bases: new Lru<string, StoredObject>(baseBytes, (o) => o.body.byteLength + 64) };
}

/**
 * A repository's objects, read as C git reads them: packs through their `.idx`
 * (an object is read at its offset, never a whole pack), then loose objects.
 * Every object read is hashed and compared with its id, so a damaged pack
 * answers `CorruptStore`, never wrong bytes.
 *
 * A repack replaces packs while reads go on. C git writes the new pack before
 * it unlinks the old ones and removes loose objects only once they are packed,
 * so an object missing from every known pack and from the loose objects is in
 * a pack not yet listed: the reader lists objects/pack again, once, and looks
 * again (a pack that vanishes while it is being opened proves a newer one is
 * in place: that listing is made again). Only then is the object missing.
 */
export class ObjectDatabase {
  private packs: PackReader[] = [];
  private readonly opening = new Map<string, Promise<PackReader | null>>();
  private scanned = false;
  private scans: Promise<void> = Promise.resolve();
  /** The first listing, shared by the reads that start together (a cold start reads 32 records at once). */
  private firstScan: Promise<void> | undefined;
  private readonly windows: WindowCache;
  private readonly bases: Lru<string, StoredObject>;

  constructor(
    private readonly fs: FsPromises,
    private readonly gitdir: string,
    caches: ObjectCaches = objectCaches(),
  ) {
    this.windows = caches.windows;
    this.bases = caches.bases;
  }

  /** The object `oid`, checked against its id; `CorruptStore` when it is missing or damaged. */
  read(oid: string): Promise<StoredObject> {
    return this.readChecked(oid, 0);
  }

  private async readChecked(oid: string, depth: number): Promise<StoredObject> {
    const found = await this.find(oid, depth);
    if (!found) throw new CorruptStore({ where: `${this.gitdir} object ${oid}`, reason: 'missing' });
    const { type, body } = found;
    const hash = body.byteLength > HASH_SLICE_BYTES ? await idInSlices(found) : objectIdHash(type, body.byteLength).update(body).digest('hex');
    if (hash !== oid) throw new CorruptStore({ where: `${this.gitdir} object ${oid}`, reason: `its bytes hash to ${hash}` });
    return found;
  }

  /**
   * Lists the packs anew: opens new ones, drops (and closes) those a repack removed. Listings
   * run one after the other, so a read that missed waits for a listing made after its miss.
   */
  rescan(): Promise<void> {
    const next = this.scans.then(() => this.scanNow());
    this.scans = next.catch(() => undefined);
    return next;
  }

  /**
   * After a repack: drops (and closes) the packs it removed, with one listing and nothing more
   * (it runs beside the writes); the packs it wrote are opened by the first read that misses.
   */
  forgetDeleted(): Promise<void> {
    const next = this.scans.then(async () => {
      this.packs = this.keepListed(new Set(await this.listPacks()));
    });
    this.scans = next.catch(() => undefined);
    return next;
  }

  private listPacks(): Promise<string[]> {
    return packIndexPaths(this.fs, this.gitdir);
  }

  private async scanNow(): Promise<void> {
    for (let previous = ''; ; ) {
      const listed = await this.listPacks();
      const opened = await Promise.all(listed.map((path) => this.openPack(path)));
      const kept = this.keepListed(new Set(listed));
      const fresh = opened.filter((p): p is PackReader => p !== null && !kept.includes(p));
      // The newest packs first: after a repack they hold everything.
      this.packs = [...fresh, ...kept];
      this.scanned = true;
      // A pack that vanished while it was opened was replaced: list again. The same listing twice
      // means an index without its pack, which no listing will mend: those are skipped.
      const listing = listed.join('\n');
      if (!opened.includes(null) || listing === previous) return;
      previous = listing;
    }
  }

  /** Closes every pack (the repository is closed). */
  close(): void {
    this.dropPacks(this.packs);
    this.packs = [];
    this.opening.clear();
    this.scanned = false;
    this.firstScan = undefined;
  }

  private async find(oid: string, depth: number): Promise<StoredObject | undefined> {
    if (!isObjectId(oid)) return undefined;
    if (!this.scanned) {
      // A listing that failed (EIO) is not kept: the next read lists again.
      await (this.firstScan ??= this.rescan().catch((err: unknown) => {
        this.firstScan = undefined;
        throw err;
      }));
    }
    const id = Buffer.from(oid, 'hex');
    for (let pass = 0; pass < 2; pass++) {
      for (const pack of this.packs) {
        const offset = pack.index.find(id);
        if (offset !== undefined) return pack.hold(() => this.resolve(pack, offset, depth));
      }
      const loose = await readLooseObject({ fs: this.fs, gitdir: this.gitdir, oid });
      if (loose) return loose;
      if (pass === 0) await this.rescan();
    }
    return undefined;
  }

  /** The object at `offset` of `pack`, its delta chain applied (bases from the cache when there). */
  private async resolve(pack: PackReader, offset: number, depth: number): Promise<StoredObject> {
    const entry: PackEntry = await pack.entryAt(offset);
    if (entry.kind === 'whole') return entry;
    if (depth > MAX_CHAIN) throw new CorruptStore({ where: `${pack.name} at ${offset}`, reason: 'delta chain too long (a loop?)' });
    let base: StoredObject;
    if (entry.kind === 'ofs') {
      const key = `${pack.key}:${entry.baseOffset}`;
      const cached = this.bases.get(key);
      base = cached ?? (await this.resolve(pack, entry.baseOffset, depth + 1));
      if (!cached) this.bases.set(key, base);
    } else {
      // Keyed by the pack too: the cache is shared with other repositories, whose reads must not tell of this one's.
      const key = `${pack.key}:${entry.baseId}`;
      const cached = this.bases.get(key);
      base = cached ?? (await this.readChecked(entry.baseId, depth + 1));
      if (!cached) this.bases.set(key, base);
    }
    const body = applyDelta(base.body, entry.delta);
    if (!Buffer.isBuffer(body)) throw new CorruptStore({ where: `${pack.name} at ${offset}`, reason: body.reason });
    return { type: base.type, body };
  }

  /** The packs still listed (`live`, their index paths); the others are dropped. */
  private keepListed(live: Set<string>): PackReader[] {
    this.dropPacks(this.packs.filter((pack) => !live.has(pack.idxPath)));
    return this.packs.filter((pack) => live.has(pack.idxPath));
  }

  private dropPacks(packs: readonly PackReader[]): void {
    if (packs.length === 0) return;
    for (const pack of packs) {
      this.opening.delete(pack.idxPath);
      pack.drop();
    }
    // What the shared caches hold of them goes too, in one pass over each (a repository may drop 200 packs at
    // once): nothing will ask for it again, as a pack opened anew has a new key. A read still under way may
    // add an entry back, which ages out.
    const keys = new Set(packs.map((pack) => pack.key));
    const ofDropped = (key: string): boolean => keys.has(key.slice(0, key.indexOf(':')));
    this.windows.forget(ofDropped);
    this.bases.deleteWhere(ofDropped);
  }

  /** Opens a listed pack once (concurrent scans share the opening); null when it vanished meanwhile. */
  private openPack(idxPath: string): Promise<PackReader | null> {
    let pending = this.opening.get(idxPath);
    if (!pending) {
      // A pack whose index does not name it may have been replaced (same name) between reading
      // the one and opening the other: opened once more before it is called damaged.
      const open = (): Promise<PackReader> => PackReader.open(this.fs, idxPath, this.windows);
      pending = open()
        .catch((err: unknown) => (err instanceof CorruptStore && err.data.reason === PACK_MISMATCH ? open() : Promise.reject(err)))
        .catch((err: unknown) => {
          this.opening.delete(idxPath);
          if (errnoCode(err) === 'ENOENT') return null;
          throw err;
        });
      this.opening.set(idxPath, pending);
    }
    return pending;
  }
}
