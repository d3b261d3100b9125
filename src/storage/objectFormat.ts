import { createHash } from 'node:crypto';
import type { Signature, TreeEntry } from './objectStager.js';

export type ObjectType = 'blob' | 'tree' | 'commit';

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
 * the same as isomorphic-git's (test/storage/objectFormat.test.ts compares
 * them on random input), so ids, and the pinned fixture, do not change.
 */
export function gitObject(type: ObjectType, body: Buffer): GitObject {
  const oid = createHash('sha1').update(`${type} ${body.byteLength}\0`).update(body).digest('hex');
  return { oid, type, body };
}

export function blobObject(content: Uint8Array): GitObject {
  return gitObject('blob', Buffer.from(content.buffer, content.byteOffset, content.byteLength));
}

/**
 * A tree: entries sorted the way git sorts them (bytewise, a folder's name
 * compared as if it ended in "/"), folder modes written as "40000".
 */
export function treeObject(entries: readonly TreeEntry[]): GitObject {
  const named = entries.map((e) => ({ e, key: Buffer.from(e.type === 'tree' ? `${e.path}/` : e.path, 'utf8') }));
  named.sort((a, b) => Buffer.compare(a.key, b.key));
  const parts: Buffer[] = [];
  for (const { e } of named) {
    const mode = e.mode.replace(/^0/, '');
    parts.push(Buffer.from(`${mode} ${e.path}\0`, 'utf8'), Buffer.from(e.oid, 'hex'));
  }
  return gitObject('tree', Buffer.concat(parts));
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
