import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import { applyDelta } from '../../src/storage/git/deltaApply.js';

/**
 * Reads objects (loose or packed) byte for byte, independently of isomorphic-git, so tests
 * can check what is really stored: the header, the entry order, the modes.
 */
export interface RawObject {
  type: string;
  body: Buffer;
}

export interface RawTreeEntry {
  /** The mode exactly as stored ("100644", "40000"). */
  mode: string;
  name: string;
  oid: string;
}

export async function readObject(fs: FsPromises, gitdir: string, oid: string): Promise<RawObject> {
  let data: Buffer;
  try {
    data = inflateSync(await fs.readFile(`${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`));
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
    return readPackedObject(fs, gitdir, oid);
  }
  const actual = createHash('sha1').update(data).digest('hex');
  if (actual !== oid) throw new Error(`object ${oid} hashes to ${actual}`);
  const nul = data.indexOf(0);
  const [type, size] = data.subarray(0, nul).toString('latin1').split(' ');
  const body = data.subarray(nul + 1);
  if (Number(size) !== body.length) throw new Error(`object ${oid} says ${size} bytes, holds ${body.length}`);
  return { type: type ?? '', body };
}

const PACK_TYPES = ['', 'commit', 'tree', 'blob', 'tag'];

/**
 * Finds `oid` through the pack indexes (version 2) and decodes its entry: a whole object, or an
 * OFS_DELTA (the store writes later versions of a tree in a batch as deltas of the earlier one)
 * applied to its base. REF_DELTA is not read here (a repacked repository is read with C git in
 * the tests that repack).
 */
async function readPackedObject(fs: FsPromises, gitdir: string, oid: string): Promise<RawObject> {
  const dir = `${gitdir}/objects/pack`;
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const wanted = Buffer.from(oid, 'hex');
  for (const name of names.filter((n) => n.startsWith('pack-') && n.endsWith('.idx'))) {
    const idx = await fs.readFile(`${dir}/${name}`);
    if (idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) throw new Error(`${name}: not a version 2 index`);
    const count = idx.readUInt32BE(8 + 255 * 4);
    const oids = 8 + 256 * 4;
    let at = -1;
    for (let i = 0; i < count; i++) {
      if (idx.compare(wanted, 0, 20, oids + i * 20, oids + i * 20 + 20) === 0) at = i;
    }
    if (at < 0) continue;
    const offset = idx.readUInt32BE(oids + count * 24 + at * 4);
    if (offset & 0x80000000) throw new Error('large offsets are not read here');
    const pack = await fs.readFile(`${dir}/${name.replace(/\.idx$/, '.pack')}`);
    const { type, body } = packEntryAt(pack, offset);
    const actual = createHash('sha1').update(`${type} ${body.length}\0`).update(body).digest('hex');
    if (actual !== oid) throw new Error(`object ${oid} hashes to ${actual}`);
    return { type, body };
  }
  throw Object.assign(new Error(`object ${oid} not found`), { code: 'ENOENT' });
}

function packEntryAt(pack: Buffer, offset: number): RawObject {
  let byte = pack[offset] as number;
  const code = (byte >> 4) & 7;
  let size = byte & 0x0f;
  let shift = 4;
  let p = offset + 1;
  while (byte & 0x80) {
    byte = pack[p++] as number;
    size += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  }
  let base: RawObject | undefined;
  if (code === 6) {
    byte = pack[p++] as number;
    let distance = byte & 0x7f;
    while (byte & 0x80) {
      byte = pack[p++] as number;
      distance = (distance + 1) * 128 + (byte & 0x7f);
    }
    base = packEntryAt(pack, offset - distance);
  }
  const type = base ? base.type : (PACK_TYPES[code] ?? '');
  if (!type) throw new Error(`pack entry at ${offset} of type ${code}`);
  const data = inflateSync(pack.subarray(p));
  if (data.length !== size) throw new Error(`pack entry at ${offset} says ${size} bytes, holds ${data.length}`);
  if (!base) return { type, body: data };
  const body = applyDelta(base.body, data);
  if (!Buffer.isBuffer(body)) throw new Error(`pack entry at ${offset}: ${body.reason}`);
  return { type, body };
}

/** The entries of a tree object in the order they are stored. */
export function parseTree(body: Buffer): RawTreeEntry[] {
  const out: RawTreeEntry[] = [];
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    const nul = body.indexOf(0, space);
    out.push({
      mode: body.subarray(at, space).toString('latin1'),
      name: body.subarray(space + 1, nul).toString('utf8'),
      oid: body.subarray(nul + 1, nul + 21).toString('hex'),
    });
    at = nul + 21;
  }
  return out;
}

export async function readRawTree(fs: FsPromises, gitdir: string, oid: string): Promise<RawTreeEntry[]> {
  const object = await readObject(fs, gitdir, oid);
  if (object.type !== 'tree') throw new Error(`${oid} is a ${object.type}, not a tree`);
  return parseTree(object.body);
}

/** Follows a path of folder names from a root tree; the entry found there, or undefined. */
export async function lookup(fs: FsPromises, gitdir: string, root: string, path: string): Promise<RawTreeEntry | undefined> {
  let tree = root;
  const parts = path.split('/');
  for (let i = 0; i < parts.length; i++) {
    const found = (await readRawTree(fs, gitdir, tree)).find((e) => e.name === parts[i]);
    if (!found || i === parts.length - 1) return found;
    tree = found.oid;
  }
  return undefined;
}

/** Git's tree order: names compared bytewise, as if folders ended with "/". */
export function gitOrder(entries: readonly RawTreeEntry[]): string[] {
  const key = (e: RawTreeEntry): Buffer => Buffer.from(e.mode === '40000' ? `${e.name}/` : e.name, 'utf8');
  return [...entries].sort((a, b) => Buffer.compare(key(a), key(b))).map((e) => e.name);
}
