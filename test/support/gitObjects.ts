import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import type { FsPromises } from '../../src/storage/fs.js';

/**
 * Reads loose objects byte for byte, independently of isomorphic-git, so tests
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

export async function readLooseObject(fs: FsPromises, gitdir: string, oid: string): Promise<RawObject> {
  const deflated = await fs.readFile(`${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`);
  const data = inflateSync(deflated);
  const actual = createHash('sha1').update(data).digest('hex');
  if (actual !== oid) throw new Error(`object ${oid} hashes to ${actual}`);
  const nul = data.indexOf(0);
  const [type, size] = data.subarray(0, nul).toString('latin1').split(' ');
  const body = data.subarray(nul + 1);
  if (Number(size) !== body.length) throw new Error(`object ${oid} says ${size} bytes, holds ${body.length}`);
  return { type: type ?? '', body };
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
  const object = await readLooseObject(fs, gitdir, oid);
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
