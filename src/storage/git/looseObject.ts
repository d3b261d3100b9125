import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { deflate, inflate } from 'node:zlib';
import { fsyncDir, pathExists, writeAndSync } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';

const deflateAsync = promisify(deflate);

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
  const deflated = await deflateAsync(Buffer.concat([Buffer.from(`blob ${bytes.byteLength}\0`, 'latin1'), bytes]), { level: 1 });
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

const inflateAsync = promisify(inflate);

/**
 * A blob's bytes when it is a loose object (a file item not yet repacked), inflated on libuv's
 * thread pool; undefined when it is not loose (then it is in a pack: read it through git).
 */
export async function readLooseBlob(args: { fs: FsPromises; gitdir: string; oid: string }): Promise<Buffer | undefined> {
  const { fs, gitdir, oid } = args;
  let raw: Uint8Array;
  try {
    raw = await fs.readFile(`${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`);
  } catch {
    return undefined;
  }
  const object = await inflateAsync(raw);
  const nul = object.indexOf(0);
  if (nul < 0 || object.subarray(0, 5).toString('latin1') !== 'blob ' || Number(object.subarray(5, nul).toString('latin1')) !== object.byteLength - nul - 1) {
    throw new Error(`loose object ${oid} is not a whole blob`);
  }
  return object.subarray(nul + 1);
}
