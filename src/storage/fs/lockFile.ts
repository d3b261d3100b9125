import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { errnoCode } from '../../common/errors.js';
import { fsyncDir } from './durable.js';
import { LockTimeout } from '../errors.js';
import type { FileHandleLike, FsPromises, StatsLike } from './fs.js';
import { dirname } from 'node:path';

/**
 * An `O_EXCL` lock file, C git style: whoever creates `<target>.lock` owns the
 * target; the owner writes the new content into the lock and renames it over
 * the target (commit) or deletes it (release). A lock older than `staleMs` is
 * left over from a crash (live writers hold locks for milliseconds) and is
 * broken, so a restart after SIGKILL needs no manual repair.
 */
export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

export class LockFile {
  private done = false;
  private written = false;
  private renamed = false;
  private constructor(
    private readonly fs: FsPromises,
    readonly path: string,
    readonly target: string,
    /** Null for a lock taken with its content already written (`acquireWritten`). */
    private readonly handle: FileHandleLike | null,
  ) {}

  static acquire(fs: FsPromises, target: string, options: LockOptions = {}): Promise<LockFile> {
    return LockFile.take(fs, target, options, async (path) => new LockFile(fs, path, target, await fs.open(path, 'wx', 0o644)));
  }

  /**
   * Takes the lock with `written` as its content: a file beside the target, written and fsynced
   * before (while the lock may still be someone else's), hard-linked as `<target>.lock`. link()
   * fails on an existing name as an O_EXCL create does, so the lock excludes just the same; the
   * content is durable already, so `publish` follows at once, with no fsync of its own. `written`
   * keeps its own name: the caller removes it.
   */
  static acquireWritten(fs: FsPromises, target: string, written: string, options: LockOptions = {}): Promise<LockFile> {
    return LockFile.take(fs, target, options, async (path) => {
      await fs.link(written, path);
      const lock = new LockFile(fs, path, target, null);
      lock.written = true;
      return lock;
    });
  }

  private static async take(fs: FsPromises, target: string, options: LockOptions, create: (path: string) => Promise<LockFile>): Promise<LockFile> {
    const { timeoutMs = 10_000, staleMs = 30_000 } = options;
    const path = `${target}.lock`;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await create(path);
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw err;
      }
      await breakIfStale(fs, path, staleMs);
      const waited = Date.now() - started;
      if (waited >= timeoutMs) throw new LockTimeout({ lockPath: path, waitedMs: waited });
      await delay(Math.min(2 ** Math.min(attempt, 6), 50));
    }
  }

  /** Writes `data` as the target's new content: fsync, rename over the target, fsync the directory. */
  async commit(data: Uint8Array | string): Promise<void> {
    await this.write(data);
    await this.publish();
  }

  /**
   * The first half of `commit`: `data` durable in the lock file, the target untouched and the lock
   * still held. A caller can do this beside other fsyncs (the write pipeline: beside the pack's),
   * then `publish`, or `release` to leave the target as it was. On failure the lock is released.
   */
  async write(data: Uint8Array | string): Promise<void> {
    this.assertOpen();
    if (!this.handle) throw new Error(`lock ${this.path} was taken written`);
    try {
      await this.handle.write(data);
      await this.handle.sync();
      await this.handle.close();
      this.written = true;
    } catch (err) {
      await this.release();
      throw err;
    }
  }

  /**
   * The second half of `commit`: the written lock file renamed over the target, and the directory
   * fsynced (`whileSyncing` is called once that fsync is under way).
   */
  async publish(whileSyncing?: () => void): Promise<void> {
    this.assertOpen();
    if (!this.written) throw new Error(`lock ${this.path} published before it was written`);
    try {
      await this.fs.rename(this.path, this.target);
      this.done = true;
      this.renamed = true;
    } catch (err) {
      await this.release();
      throw err;
    }
    await fsyncDir(this.fs, dirname(this.target), whileSyncing);
  }

  /**
   * True once the new content is in place. `commit` can fail after that point (the fsync of
   * the directory, which makes the rename durable): the caller then knows the target changed.
   */
  get committed(): boolean {
    return this.renamed;
  }

  async release(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.handle?.close().catch(() => undefined);
    await this.fs.unlink(this.path).catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.done) throw new Error(`lock ${this.path} already released`);
  }
}

/** Runs `fn` while holding the lock on `target`; releases it whatever happens. */
export async function withLock<T>(
  fs: FsPromises,
  target: string,
  fn: (lock: LockFile) => Promise<T>,
  options?: LockOptions,
): Promise<T> {
  const lock = await LockFile.acquire(fs, target, options);
  try {
    return await fn(lock);
  } finally {
    await lock.release();
  }
}

/**
 * Removes the lock at `path` if it is older than `staleMs`. Two waiters can judge the same crashed
 * lock stale; if the first breaks it and takes a fresh lock before the second acts, unlinking by
 * name would delete that live owner's lock and let the second in beside it. So the lock is moved
 * aside first (rename): once aside, no one else can reach it by name, and judging it again there
 * judges the very file we took. A stale one is deleted; a fresh one (a live owner's, taken since
 * our first look) is put back with link(), which fails rather than replace a lock made meanwhile.
 * What remains is a window of two calls while that owner's lock is away from its name: a third
 * waiter retrying just then takes the name (the put-back then fails), or the owner committing just
 * then fails (and its lock, put back after it gave up, waits out `staleMs`). Each needs a crashed
 * lock, its break, a retake and a third move within those microseconds; the plain unlink gave
 * two owners to any two waiters that looked at a crashed lock together.
 */
async function breakIfStale(fs: FsPromises, path: string, staleMs: number): Promise<void> {
  try {
    if (!isStale(await fs.stat(path), staleMs)) return;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  // Ends in ".lock" like the lock itself: git reads every other file under refs/ as a branch.
  const aside = `${path}.stale-${randomBytes(6).toString('hex')}.lock`;
  try {
    await fs.rename(path, aside);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return; // another waiter broke it first
    throw err;
  }
  let stale = false;
  try {
    stale = isStale(await fs.stat(aside), staleMs);
  } finally {
    if (!stale) await fs.link(aside, path).catch(ignore('EEXIST'));
    await fs.unlink(aside).catch(ignore('ENOENT'));
  }
}

const ignore =
  (code: string) =>
  (err: unknown): void => {
    if (errnoCode(err) !== code) throw err;
  };

/** Judged by the inode's own age, not by its number: a freed inode number is soon reused for a new lock. */
const isStale = (stats: StatsLike, staleMs: number): boolean => Date.now() - stats.mtimeMs > staleMs;
