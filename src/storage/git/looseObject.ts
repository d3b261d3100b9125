import { randomBytes } from 'node:crypto';
import { constants as zlibConstants, inflateSync } from 'node:zlib';
import { errnoCode } from '../../common/errors.js';
import { CorruptStore } from '../errors.js';
import { fsyncDir, pathExists, writeAndSync } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';
import { deflateOffLoop, inflateOffLoop } from './offLoopZlib.js';
import { PACK_TYPES, type StoredType } from './packReader.js';

/**
 * Writes a blob as a loose object, durably, before any commit names it: the way a file item's
 * original bytes (up to tens of MiB) enter the repository. Deflated on libuv's thread pool and
 * hashed by the caller off the event loop (the extraction worker), so a large upload never
 * blocks other requests the way deflating it inside the group commit's pack would. As C git
 * does: a temp file at `objects/tmp_obj_*` (fsck ignores those), fsync, rename into place, fsync
 * both directories. An object already there is left alone (objects never change); one nothing
 * ends up naming (a refused or crashed upload) is a dangling blob, which fsck only mentions.
 */
export async function writeLooseBlob(args: { fs: FsPromises; gitdir: string; oid: string; bytes: Uint8Array }): Promise<void> {
  const { fs, gitdir, oid, bytes } = args;
  const objects = `${gitdir}/objects`;
  const dir = `${objects}/${oid.slice(0, 2)}`;
  const path = `${dir}/${oid.slice(2)}`;
  if (await pathExists(fs, path)) return;
  const deflated = await deflateOffLoop(Buffer.concat([Buffer.from(`blob ${bytes.byteLength}\0`, 'latin1'), bytes]), 1);
  const tmp = `${objects}/tmp_obj_${randomBytes(6).toString('hex')}`;
  await writeAndSync(fs, tmp, deflated, 'wx');
  try {
    await fs.mkdir(dir, { recursive: true });
    await fsyncDir(fs, objects);
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(fs, dir);
}

/** Loose objects above this are inflated on libuv's thread pool, not on the event loop. */
const INFLATE_ASYNC_BYTES = 64 * 1024;

/** Compressed bytes read for the header alone: a deflate block's own header (its Huffman tables) fits well within. */
const HEADER_PROBE_BYTES = 512;

/**
 * The length a loose object's header states for the whole inflated object (header included), read by inflating
 * only its first compressed bytes; undefined when they do not reach the header's end or it is not a header.
 */
function statedLength(raw: Buffer): number | undefined {
  let start: Buffer;
  try {
    start = inflateSync(raw.subarray(0, HEADER_PROBE_BYTES), { finishFlush: zlibConstants.Z_SYNC_FLUSH });
  } catch {
    return undefined;
  }
  const nul = start.indexOf(0);
  const space = start.indexOf(0x20);
  if (nul < 0 || space < 0 || space > nul || nul > 32) return undefined;
  const size = Number(start.toString('latin1', space + 1, nul));
  return Number.isSafeInteger(size) && size >= 0 ? nul + 1 + size : undefined;
}

/**
 * A loose object (`objects/xx/...`, zlib of `<type> <size>\0<body>`), or undefined when there is
 * none (ENOENT: it is packed, or missing). Any other failure to read it is thrown; a header
 * that does not describe the body is `CorruptStore`. The caller checks the id.
 */
export async function readLooseObject(args: { fs: FsPromises; gitdir: string; oid: string }): Promise<{ type: StoredType; body: Buffer } | undefined> {
  const { fs, gitdir, oid } = args;
  const path = `${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`;
  let raw: Buffer;
  try {
    raw = await fs.readFile(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  let object: Buffer;
  try {
    if (raw.byteLength <= INFLATE_ASYNC_BYTES) object = inflateSync(raw);
    else {
      // Sized by its header when its first bytes give it (then bounded by it), else guessed: text deflates to a
      // third or so of its size.
      const stated = statedLength(raw);
      object = await inflateOffLoop(raw, stated ?? raw.byteLength * 3, stated);
    }
  } catch (err) {
    throw new CorruptStore({ where: path, reason: `cannot inflate: ${String(err)}` });
  }
  const space = object.indexOf(0x20);
  const nul = object.indexOf(0);
  const type = object.toString('latin1', 0, space);
  if (space < 0 || nul < space || !LOOSE_TYPES.has(type) || Number(object.toString('latin1', space + 1, nul)) !== object.byteLength - nul - 1) {
    throw new CorruptStore({ where: path, reason: 'its header does not describe its body' });
  }
  return { type: type as StoredType, body: object.subarray(nul + 1) };
}

const LOOSE_TYPES = new Set<string>(Object.values(PACK_TYPES));
