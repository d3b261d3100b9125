import { createHash } from 'node:crypto';
import { constants, crc32, deflateSync } from 'node:zlib';
import type { GitObject, ObjectType } from './objectFormat.js';

const TYPE_CODE: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3 };

/** Offsets past this need the index's 8-byte table (packs of 2 GiB and more). */
const LARGE_OFFSET = 0x80000000;

export interface BuiltPack {
  /** The pack's checksum, which names the files: `pack-<checksum>.pack` and `.idx`. */
  checksum: string;
  pack: Buffer;
  idx: Buffer;
}

/** An object stored as the delta of another object of the same pack, which comes before it. */
export interface PackDelta {
  base: string;
  /** The delta in git's format (`treeDelta`): sizes, then copy and insert instructions. */
  data: Buffer;
}

const OFS_DELTA = 6;

/**
 * Encodes objects as a git pack (version 2) and its index (version 2), the
 * files C git itself reads: a group commit lands as one pack, so a batch costs
 * one round of fsyncs however many objects it holds. Objects named in
 * `deltas` are written as OFS_DELTA entries (their base named by its distance
 * back in the pack); the others, and a delta whose base is not earlier in the
 * pack, whole. Deltas across packs are left to `git repack`.
 *
 * Deflated with level 1: these packs are short-lived (repack recompresses what
 * it keeps) and the deflate sits on the write path.
 */
export function buildPack(objects: readonly GitObject[], deltas: ReadonlyMap<string, PackDelta> = new Map()): BuiltPack {
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(objects.length, 8);
  const chunks: Buffer[] = [header];
  const entries: Array<{ oid: Buffer; offset: number; crc: number }> = [];
  const offsets = new Map<string, number>();
  let offset = header.length;
  for (const object of objects) {
    const delta = deltas.get(object.oid);
    const baseOffset = delta ? offsets.get(delta.base) : undefined;
    const entry =
      delta && baseOffset !== undefined
        ? Buffer.concat([entryHeader(OFS_DELTA, delta.data.byteLength), baseDistance(offset - baseOffset), deflateBytes(delta.data, constants.Z_BEST_SPEED)])
        : Buffer.concat([entryHeader(TYPE_CODE[object.type], object.body.byteLength), deflate(object)]);
    entries.push({ oid: Buffer.from(object.oid, 'hex'), offset, crc: crc32(entry) });
    offsets.set(object.oid, offset);
    chunks.push(entry);
    offset += entry.length;
  }
  const packSum = sha1(chunks);
  chunks.push(packSum);
  return { checksum: packSum.toString('hex'), pack: Buffer.concat(chunks), idx: buildIndex(entries, packSum) };
}

/**
 * OFS_DELTA's distance back to the base: 7 bits at a time, high first, each continued group
 * counted one less (git's encoding, so that no two byte strings mean the same distance).
 */
function baseDistance(distance: number): Buffer {
  const bytes = [distance & 0x7f];
  let rest = Math.floor(distance / 128);
  while (rest > 0) {
    rest -= 1;
    bytes.unshift(0x80 | (rest & 0x7f));
    rest = Math.floor(rest / 128);
  }
  return Buffer.from(bytes);
}

/**
 * Level 1, with a window no larger than the object: zlib allocates and
 * initializes its window and hash tables on every call, which for the small
 * objects of a commit costs more than compressing them. Trees are stored
 * (level 0): half of a tree is object ids, which do not compress, and a
 * thousand-entry folder is rewritten on every change in it; the later
 * versions of a tree in the same pack are deltas (level 1: a delta is mostly
 * a changed entry's name and id, and small), and the repack deltifies the rest.
 */
function deflate(object: GitObject): Buffer {
  return deflateBytes(object.body, object.type === 'tree' ? constants.Z_NO_COMPRESSION : constants.Z_BEST_SPEED);
}

function deflateBytes(bytes: Buffer, level: number): Buffer {
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(bytes.byteLength + 262))));
  return deflateSync(bytes, { level, windowBits, memLevel: Math.max(1, windowBits - 7) });
}

/** The type and inflated size, 4 bits then 7 bits at a time, high bit meaning "more follows". */
function entryHeader(type: number, size: number): Buffer {
  const bytes = [(type << 4) | (size & 0x0f)];
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) | 0x80;
    bytes.push(rest & 0x7f);
    rest = Math.floor(rest / 128);
  }
  return Buffer.from(bytes);
}

function buildIndex(unsorted: Array<{ oid: Buffer; offset: number; crc: number }>, packSum: Buffer): Buffer {
  const entries = [...unsorted].sort((a, b) => Buffer.compare(a.oid, b.oid));
  const n = entries.length;
  const large = entries.filter((e) => e.offset >= LARGE_OFFSET);
  const out = Buffer.alloc(8 + 256 * 4 + n * (20 + 4 + 4) + large.length * 8 + 40);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  let at = 8;
  // Fan-out: entry i counts the objects whose first byte is at most i.
  let cursor = 0;
  for (let byte = 0; byte < 256; byte++) {
    while (cursor < n && (entries[cursor] as { oid: Buffer }).oid[0] === byte) cursor++;
    out.writeUInt32BE(cursor, at);
    at += 4;
  }
  for (const e of entries) at += e.oid.copy(out, at);
  for (const e of entries) at = out.writeUInt32BE(e.crc >>> 0, at);
  let largeAt = 0;
  for (const e of entries) {
    if (e.offset < LARGE_OFFSET) at = out.writeUInt32BE(e.offset, at);
    else at = out.writeUInt32BE((0x80000000 | largeAt++) >>> 0, at);
  }
  for (const e of large) at = out.writeBigUInt64BE(BigInt(e.offset), at);
  at += packSum.copy(out, at);
  sha1([out.subarray(0, at)]).copy(out, at);
  return out;
}

function sha1(chunks: readonly Buffer[]): Buffer {
  const hash = createHash('sha1');
  for (const c of chunks) hash.update(c);
  return hash.digest();
}
