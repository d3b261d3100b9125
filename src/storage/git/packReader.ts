import { inflateSync } from 'node:zlib';
import { CorruptStore } from '../errors.js';
import type { FileHandleLike, FsPromises } from '../fs/fs.js';
import { Lru } from '../../common/lru.js';
import { inflateOffLoop } from './offLoopZlib.js';
import { PackIndex } from './packIndex.js';

/** Pack entry types (git's `object_type`); 5 is unused. */
export const PACK_TYPES = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' } as const;
export type StoredType = (typeof PACK_TYPES)[keyof typeof PACK_TYPES];
const OFS_DELTA = 6;
const REF_DELTA = 7;

/** One entry of a pack, inflated: a whole object, or a delta on a base named by offset or by id. */
export type PackEntry =
  | { kind: 'whole'; type: StoredType; body: Buffer }
  | { kind: 'ofs'; baseOffset: number; delta: Buffer }
  | { kind: 'ref'; baseId: string; delta: Buffer };

/**
 * Reads are made in aligned windows of the pack (as C git maps packs in
 * windows, core.packedGitWindowSize), kept in an LRU shared by a repository's
 * packs (and a server's repositories: ObjectCaches in objectDatabase.ts):
 * objects written together sit together (a history walk reads commits
 * one after the other; the records of a folder are neighbours), so most reads
 * cost no system call. An entry larger than a window, or across two, is read
 * on its own, exactly its bytes.
 */
export const WINDOW_BYTES = 64 * 1024;
/** Reads remembered per pack to tell a walk (or several at once) from lone reads. */
const RECENT_READS = 32;
/** Compressed entries above this are inflated on libuv's thread pool, not on the event loop. */
const INFLATE_ASYNC_BYTES = 1024 * 1024;

export const PACK_MISMATCH = 'the pack does not end with the checksum its index names';

export class WindowCache {
  private readonly lru: Lru<string, Buffer>;
  private readonly loading = new Map<string, Promise<Buffer>>();

  constructor(maxBytes: number) {
    this.lru = new Lru<string, Buffer>(maxBytes, (b) => b.byteLength);
  }

  /** The bytes of the windows kept. */
  get bytes(): number {
    return this.lru.weight;
  }

  /**
   * Forgets the windows whose key `matches` (`<PackReader.key>:<window>`): those of packs dropped, which in a cache
   * shared by many repositories would only crowd out live ones.
   */
  forget(matches: (key: string) => boolean): void {
    this.lru.deleteWhere(matches);
  }

  /** The window if it is in memory (or being read): no read is started. */
  cached(key: string): Buffer | Promise<Buffer> | undefined {
    return this.lru.get(key) ?? this.loading.get(key);
  }

  async get(key: string, load: () => Promise<Buffer>): Promise<Buffer> {
    const hit = this.lru.get(key);
    if (hit) return hit;
    let pending = this.loading.get(key);
    if (!pending) {
      // A failed read (EIO) is not remembered: the next read tries the disk again.
      pending = load().finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
      this.lru.set(key, await pending);
    }
    return pending;
  }
}

/**
 * One pack file, open for as long as it is listed in objects/pack: its index
 * in memory, its data read at offsets through one descriptor. A repack may
 * unlink the pack while it is open; the descriptor still reads it (POSIX), so
 * a read under way finishes, and the descriptor is closed once the pack is
 * dropped and no read uses it.
 */
let opened = 0;

export class PackReader {
  /** Unique per opening: a pack C git writes again under the same name may differ in its offsets. */
  readonly key = `${++opened}`;
  private reads = 0;
  private dropped = false;
  /** Where the last entries read began (a ring): a read near one of them is read through a window. */
  private readonly recent = new Float64Array(RECENT_READS).fill(-Infinity);
  private next = 0;

  private constructor(
    readonly idxPath: string,
    readonly name: string,
    readonly index: PackIndex,
    private readonly handle: FileHandleLike,
    private readonly size: number,
    private readonly windows: WindowCache,
  ) {}

  /** Opens `<pack>.idx` and `<pack>.pack`; ENOENT (a repack removed it) is the caller's to handle. */
  static async open(fs: FsPromises, idxPath: string, windows: WindowCache): Promise<PackReader> {
    const index = new PackIndex(await fs.readFile(idxPath), idxPath);
    const packPath = `${idxPath.slice(0, -'.idx'.length)}.pack`;
    const handle = await fs.open(packPath, 'r');
    try {
      const { size } = await handle.stat();
      const trailer = Buffer.alloc(20);
      if (size < 32) throw new CorruptStore({ where: packPath, reason: `pack of ${size} bytes` });
      await readFully(handle, trailer, size - 20);
      if (!trailer.equals(index.packChecksum)) throw new CorruptStore({ where: packPath, reason: PACK_MISMATCH });
      return new PackReader(idxPath, packPath, index, handle, size, windows);
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Runs `read` with the descriptor held open: a pack dropped meanwhile (a repack removed it) is
   * closed only after it. An object's delta chain is read under one hold, entry after entry.
   */
  async hold<T>(read: () => Promise<T>): Promise<T> {
    this.reads++;
    try {
      return await read();
    } finally {
      this.reads--;
      if (this.dropped && this.reads === 0) void this.handle.close().catch(() => undefined);
    }
  }

  /** The entry at `offset` (from this pack's index), inflated, its size checked against its header. */
  entryAt(offset: number): Promise<PackEntry> {
    return this.hold(async () => this.parse(offset, await this.bytes(offset, this.index.endOf(offset, this.size))));
  }

  /** The pack is no longer listed: close the descriptor once the reads under way are done. */
  drop(): void {
    if (this.dropped) return;
    this.dropped = true;
    if (this.reads === 0) void this.handle.close().catch(() => undefined);
  }

  private async parse(offset: number, raw: Buffer): Promise<PackEntry> {
    const corrupt = (reason: string): CorruptStore => new CorruptStore({ where: `${this.name} at ${offset}`, reason });
    let at = 0;
    let byte = raw[at++] ?? 0;
    const type = (byte >> 4) & 7;
    let size = byte & 0x0f;
    for (let shift = 4; byte & 0x80; shift += 7) {
      if (at >= raw.byteLength) throw corrupt('entry header cut short');
      byte = raw[at++] as number;
      size += (byte & 0x7f) * 2 ** shift;
    }
    let base: { baseOffset: number } | { baseId: string } | undefined;
    if (type === OFS_DELTA) {
      byte = raw[at++] ?? 0;
      let distance = byte & 0x7f;
      while (byte & 0x80) {
        byte = raw[at++] ?? 0;
        distance = (distance + 1) * 128 + (byte & 0x7f);
      }
      if (distance <= 0 || distance > offset) throw corrupt(`delta base ${distance} bytes back is outside the pack`);
      base = { baseOffset: offset - distance };
    } else if (type === REF_DELTA) {
      if (at + 20 > raw.byteLength) throw corrupt('delta base id cut short');
      base = { baseId: raw.toString('hex', at, at + 20) };
      at += 20;
    } else if (!(type in PACK_TYPES)) {
      throw corrupt(`unknown entry type ${type}`);
    }
    const compressed = raw.subarray(at);
    let body: Buffer;
    try {
      const options = { maxOutputLength: Math.max(size, 1) };
      body = compressed.byteLength > INFLATE_ASYNC_BYTES ? await inflateOffLoop(compressed, size, options.maxOutputLength) : inflateSync(compressed, options);
    } catch (err) {
      throw corrupt(`cannot inflate: ${String(err)}`);
    }
    if (body.byteLength !== size) throw corrupt(`inflated to ${body.byteLength} bytes, the header says ${size}`);
    if (!base) return { kind: 'whole', type: PACK_TYPES[type as keyof typeof PACK_TYPES], body };
    return 'baseId' in base ? { kind: 'ref', baseId: base.baseId, delta: body } : { kind: 'ofs', baseOffset: base.baseOffset, delta: body };
  }

  private async bytes(start: number, end: number): Promise<Buffer> {
    if (end <= start || end > this.size - 20) throw new CorruptStore({ where: `${this.name} at ${start}`, reason: `entry ends at ${end}, outside the pack` });
    const first = Math.floor(start / WINDOW_BYTES);
    const near = this.recent.some((at) => Math.abs(start - at) < 2 * WINDOW_BYTES);
    this.recent[this.next] = start;
    this.next = (this.next + 1) % RECENT_READS;
    const key = `${this.key}:${first}`;
    // A window is read for reads near one of the last few (a walk, a folder's records, several lists
    // going through the same items at once: one read of the thread pool for many objects); a lone
    // read (a GET of one item) reads its entry alone, a few hundred bytes rather than 64 KiB of garbage.
    if (first === Math.floor((end - 1) / WINDOW_BYTES) && (near || this.windows.cached(key))) {
      const windowStart = first * WINDOW_BYTES;
      const window = await this.windows.get(key, async () => {
        const buf = Buffer.allocUnsafe(Math.min(WINDOW_BYTES, this.size - windowStart));
        await readFully(this.handle, buf, windowStart);
        return buf;
      });
      return window.subarray(start - windowStart, end - windowStart);
    }
    const buf = Buffer.allocUnsafe(end - start);
    await readFully(this.handle, buf, start);
    return buf;
  }
}

async function readFully(handle: FileHandleLike, buf: Buffer, position: number): Promise<void> {
  for (let done = 0; done < buf.byteLength; ) {
    const { bytesRead } = await handle.read(buf, done, buf.byteLength - done, position + done);
    if (bytesRead === 0) throw new CorruptStore({ where: `pack at ${position + done}`, reason: 'the file ends early' });
    done += bytesRead;
  }
}
