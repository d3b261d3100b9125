import { errnoCode } from '../errors.js';
import { RefConflict } from './errors.js';
import type { FsPromises } from './fs.js';
import { LockFile, type LockOptions } from './lockFile.js';

export const MAIN_REF = 'refs/heads/main';
const OID = /^[0-9a-f]{40}$/;

/** Reads a branch tip: the loose ref if there is one, else its line in packed-refs (after `git gc`). */
export async function readRef(fs: FsPromises, gitdir: string, ref = MAIN_REF): Promise<string | null> {
  try {
    const value = (await fs.readFile(`${gitdir}/${ref}`, 'utf8')).trim();
    if (!OID.test(value)) throw new Error(`${ref} holds "${value.slice(0, 60)}", not an object id`);
    return value;
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  let packed: string;
  try {
    packed = await fs.readFile(`${gitdir}/packed-refs`, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
  for (const line of packed.split('\n')) {
    const [oid, name] = line.split(' ');
    if (name === ref && oid && OID.test(oid)) return oid;
  }
  return null;
}

/**
 * Compare-and-swap of a branch (design.md, storage rule 2): under the
 * `<ref>.lock` O_EXCL lock, check the ref still holds `expected`, then write
 * `next` durably. isomorphic-git's writeRef checks nothing and takes no lock.
 */
export async function compareAndSwapRef(args: {
  fs: FsPromises;
  gitdir: string;
  ref?: string;
  expected: string | null;
  next: string;
  lock?: LockOptions;
}): Promise<void> {
  const { fs, gitdir, ref = MAIN_REF, expected, next } = args;
  const lock = await LockFile.acquire(fs, `${gitdir}/${ref}`, args.lock);
  try {
    const actual = await readRef(fs, gitdir, ref);
    if (actual !== expected) throw new RefConflict({ ref, expected, actual });
    await lock.commit(`${next}\n`);
  } finally {
    await lock.release();
  }
}
