import { randomBytes } from 'node:crypto';
import { errnoCode } from '../../common/errors.js';
import { RefConflict } from '../errors.js';
import type { FsPromises } from '../fs/fs.js';
import { LockFile, type LockOptions } from '../fs/lockFile.js';
import { fsyncDir, writeAndSync } from '../fs/durable.js';
import { dirname } from 'node:path';
import { isObjectId } from './objectFormat.js';

export const MAIN_REF = 'refs/heads/main';

/** Reads a branch tip: the loose ref if there is one, else its line in packed-refs (after `git gc`). */
export async function readRef(fs: FsPromises, gitdir: string, ref = MAIN_REF): Promise<string | null> {
  try {
    const value = (await fs.readFile(`${gitdir}/${ref}`, 'utf8')).trim();
    if (!isObjectId(value)) throw new Error(`${ref} holds "${value.slice(0, 60)}", not an object id`);
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
    if (name === ref && oid && isObjectId(oid)) return oid;
  }
  return null;
}

/**
 * Compare-and-swap of a branch, so two racing commits cannot lose one: under the
 * `<ref>.lock` O_EXCL lock, check the ref still holds `expected`, then write
 * `next` durably. isomorphic-git's writeRef checks nothing and takes no lock.
 */
export async function compareAndSwapRef(args: RefSwapArgs): Promise<void> {
  const swap = await prepareRefSwap(args);
  await swap.publish();
}

export interface RefSwapArgs {
  fs: FsPromises;
  gitdir: string;
  ref?: string;
  expected: string | null;
  next: string;
  lock?: LockOptions;
}

/** A compare-and-swap whose new value is durable in the lock file and not yet in place. */
export interface PreparedRefSwap {
  /** Renames the lock over the ref and fsyncs its directory: the swap is done and durable. */
  publish(): Promise<void>;
  /** Leaves the ref as it was and releases the lock. */
  abort(): Promise<void>;
}

/**
 * The first half of `compareAndSwapRef`: the lock taken, the ref checked against `expected`
 * (RefConflict otherwise) and `next` written and fsynced in the lock file. The write pipeline
 * does this beside the fsync of the batch's pack, so that the ref's own file fsync is no round of
 * its own; the ref moves (`publish`) only once the pack is durable, so no crash can leave it
 * naming objects that are not on disk. A failure releases the lock.
 */
export async function prepareRefSwap(args: RefSwapArgs): Promise<PreparedRefSwap> {
  const { fs, gitdir, ref = MAIN_REF, expected, next } = args;
  const lock = await LockFile.acquire(fs, `${gitdir}/${ref}`, args.lock);
  try {
    const actual = await readRef(fs, gitdir, ref);
    if (actual !== expected) throw new RefConflict({ ref, expected, actual });
    await lock.write(`${next}\n`);
  } catch (err) {
    await lock.release();
    throw err;
  }
  return {
    publish: () => publishLock({ fs, gitdir, ref, expected, next, lock, lockOptions: args.lock }),
    abort: () => lock.release(),
  };
}

/** A branch's next value, durable in a file of its own beside the branch, not yet its value. */
export interface StagedRefUpdate {
  /**
   * The compare-and-swap: takes the ref's lock with the staged file (`LockFile.acquireWritten`),
   * checks the ref still holds `expected` (RefConflict otherwise), renames the lock over the ref
   * and fsyncs its directory. `whileSyncing` is called once that fsync is under way. The staged
   * file is gone afterwards, whatever happened; on failure the ref holds `expected` (see
   * `prepareRefSwap`'s publish) and no lock is left.
   */
  swap(opts?: { whileSyncing?: () => void }): Promise<void>;
  /** Removes the staged file, the ref untouched. */
  discard(): Promise<void>;
}

/**
 * The group commit's ref update in two halves, for a pipeline: the new value written and fsynced
 * now (beside the batch's pack, while the batch before may still hold the ref's lock), the swap
 * later, once the batch before has moved the ref: then the swap waits for one fsync, the
 * directory's, not two. The file is `<ref>.next-<random>.lock`: git passes over names ending in
 * `.lock` under refs/, so a crash leaves nothing git would read as a branch.
 */
export async function stageRefUpdate(args: Omit<RefSwapArgs, 'expected'> & { expected: string | null }): Promise<StagedRefUpdate> {
  const { fs, gitdir, ref = MAIN_REF, expected, next } = args;
  const target = `${gitdir}/${ref}`;
  const staged = `${target}.next-${randomBytes(6).toString('hex')}.lock`;
  const discard = (): Promise<void> => fs.unlink(staged).catch(() => undefined);
  try {
    await writeAndSync(fs, staged, `${next}\n`);
  } catch (err) {
    await discard();
    throw err;
  }
  return {
    swap: async (opts = {}) => {
      let lock: LockFile;
      try {
        lock = await LockFile.acquireWritten(fs, target, staged, args.lock);
      } catch (err) {
        await discard();
        throw err;
      }
      try {
        // Removed before the ref moves: a failure up to the rename fails the swap with the ref untouched.
        await fs.unlink(staged);
        const actual = await readRef(fs, gitdir, ref);
        if (actual !== expected) throw new RefConflict({ ref, expected, actual });
      } catch (err) {
        await lock.release();
        await discard();
        throw err;
      }
      await publishLock({ fs, gitdir, ref, expected, next, lock, lockOptions: args.lock, whileSyncing: opts.whileSyncing });
    },
    discard,
  };
}

/**
 * Removes the staged values a crash left beside `ref` (see `stageRefUpdate`), when a repository is
 * opened. Only those older than `staleMs`, as for a lock: a tool that opens the repository beside a
 * running server (`verify`) must not take a live writer's value away (a write holds one for milliseconds).
 */
export async function removeStagedRefUpdates(fs: FsPromises, gitdir: string, ref = MAIN_REF, staleMs = 30_000): Promise<void> {
  const target = `${gitdir}/${ref}`;
  const dir = dirname(target);
  const prefix = `${target.slice(dir.length + 1)}.next-`;
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.lock')) continue;
    const path = `${dir}/${name}`;
    const age = await fs.stat(path).then((st) => Date.now() - st.mtimeMs, () => 0);
    if (age > staleMs) await fs.unlink(path).catch(() => undefined);
  }
}

/**
 * Renames a written lock over the ref and fsyncs the directory. The rename may go through and only
 * the fsync of the directory fail: the branch shows `next`, but not durably, and the caller answers
 * failure (a write answers 200 only once the ref update is durable). Then `expected` is put back, so
 * that the branch holds what the caller reports; the caller re-reads the branch either way.
 */
async function publishLock(args: { fs: FsPromises; gitdir: string; ref: string; expected: string | null; next: string; lock: LockFile; lockOptions?: LockOptions; whileSyncing?: () => void }): Promise<void> {
  const { fs, gitdir, ref, expected, next, lock } = args;
  try {
    await lock.publish(args.whileSyncing);
  } catch (err) {
    if (lock.committed) await undoSwap({ fs, gitdir, ref, expected, next, lock: args.lockOptions }).catch(() => undefined);
    throw err;
  } finally {
    await lock.release();
  }
}

/** Sets the branch back from `next` to `expected` (deleting it when it had none), under its lock. */
async function undoSwap(args: { fs: FsPromises; gitdir: string; ref: string; expected: string | null; next: string; lock?: LockOptions }): Promise<void> {
  const { fs, gitdir, ref, expected, next } = args;
  const target = `${gitdir}/${ref}`;
  const lock = await LockFile.acquire(fs, target, args.lock);
  try {
    if ((await readRef(fs, gitdir, ref)) !== next) return; // someone else has moved it since: not ours to undo
    if (expected !== null) {
      await lock.commit(`${expected}\n`);
    } else {
      await fs.unlink(target);
      await fsyncDir(fs, dirname(target));
    }
  } finally {
    await lock.release();
  }
}
