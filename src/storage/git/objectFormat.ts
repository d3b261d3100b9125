import { createHash, type Hash } from 'node:crypto';

export interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
}

export interface Signature {
  name: string;
  email: string;
  /** Whole seconds since the epoch (git stores no fractions; fsck --strict checks). */
  timestamp: number;
}

export type ObjectType = 'blob' | 'tree' | 'commit';

/** A full SHA-1 object id as git writes it: 40 lowercase hex digits. */
export function isObjectId(value: string): boolean {
  return /^[0-9a-f]{40}$/.test(value);
}

/** A git object before it is stored: its id, its type and its body (without the `<type> <size>\0` header). */
export interface GitObject {
  oid: string;
  type: ObjectType;
  body: Buffer;
}

/**
 * Git's object encoding, written here rather than through isomorphic-git's
 * writers: those build a file-system wrapper, go through WebCrypto and
 * CompressionStream, and cost about 0.66 ms per object, which capped group
 * commit at ~100 commits/s. Node's own SHA-1 costs microseconds. The bytes are
 * the same as isomorphic-git's (test/storage/git/objectFormat.test.ts compares
 * them on random input), so ids, and the pinned fixture, do not change.
 */
export function gitObject(type: ObjectType, body: Buffer): GitObject {
  const oid = objectIdHash(type, body.byteLength).update(body).digest('hex');
  return { oid, type, body };
}

/** The SHA-1 an object's id is, its `<type> <size>\0` header already in: the body is still to be fed to it. */
export function objectIdHash(type: string, byteLength: number): Hash {
  return createHash('sha1').update(`${type} ${byteLength}\0`);
}

export function blobObject(content: Uint8Array): GitObject {
  return gitObject('blob', Buffer.from(content.buffer, content.byteOffset, content.byteLength));
}

/** Git's tree order: names compared bytewise, a folder's name as if it ended in "/". */
export function compareTreeEntries(a: TreeEntry, b: TreeEntry): number {
  const x = a.type === 'tree' ? `${a.path}/` : a.path;
  const y = b.type === 'tree' ? `${b.path}/` : b.path;
  // UTF-16 order is UTF-8 byte order for ASCII, which every item path is; others are compared as bytes.
  if (isAscii(x) && isAscii(y)) return x < y ? -1 : x > y ? 1 : 0;
  return Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** True when `entries` are in git's tree order already (the tree editor keeps them so). */
function inTreeOrder(entries: readonly TreeEntry[]): boolean {
  for (let i = 1; i < entries.length; i++) {
    if (compareTreeEntries(entries[i - 1] as TreeEntry, entries[i] as TreeEntry) >= 0) return false;
  }
  return true;
}

/** A tree: entries in git's order (sorted here unless they already are), folder modes written as "40000". */
export function treeObject(entries: readonly TreeEntry[]): GitObject {
  return gitObject('tree', Buffer.concat(inTreeOrderOf(entries).map(encodedEntry)));
}

/** `entries` in git's tree order: the same array when they already are (the tree editor keeps them so). */
export function inTreeOrderOf(entries: readonly TreeEntry[]): readonly TreeEntry[] {
  return inTreeOrder(entries) ? entries : [...entries].sort(compareTreeEntries);
}

/**
 * Entries are immutable and shared by every version of a tree the editor
 * writes, so each is encoded once: writing a thousand-entry tree is then one
 * copy of its bytes, not three thousand small writes.
 */
const ENCODED = new WeakMap<TreeEntry, Buffer>();

export function encodedEntry(e: TreeEntry): Buffer {
  let bytes = ENCODED.get(e);
  if (!bytes) {
    bytes = Buffer.concat([Buffer.from(`${modeOf(e)} ${e.path}\0`, 'utf8'), Buffer.from(e.oid, 'hex')]);
    ENCODED.set(e, bytes);
  }
  return bytes;
}

/** The mode as git writes it in a tree: folders without the leading zero. */
function modeOf(e: TreeEntry): string {
  return e.mode === '040000' ? '40000' : e.mode;
}

/**
 * A commit with author and committer the same, at UTC (timezone "+0000"). The
 * message is normalized as isomorphic-git does (no CR, no leading blank lines,
 * exactly one trailing newline), so a commit written either way has one id.
 */
export function commitObject(args: { tree: string; parents: readonly string[]; author: Signature; message: string }): GitObject {
  const who = `${args.author.name} <${args.author.email}> ${args.author.timestamp} +0000`;
  const headers = [`tree ${args.tree}`, ...args.parents.map((p) => `parent ${p}`), `author ${who}`, `committer ${who}`];
  const message = `${args.message.replace(/\r/g, '').replace(/^\n+/, '').replace(/\n+$/, '')}\n`;
  return gitObject('commit', Buffer.from(`${headers.join('\n')}\n\n${message}`, 'utf8'));
}
