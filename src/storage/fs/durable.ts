import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { errnoCode } from '../../common/errors.js';
import type { FsPromises } from './fs.js';

/**
 * Durable writes, the way C git does them (isomorphic-git never fsyncs): write a
 * temp file, fsync it, rename it into place, fsync the directory. A crash leaves
 * either the old file or the new one, never half of one.
 */
export async function writeFileDurable(fs: FsPromises, path: string, data: Uint8Array | string, mode = 0o644): Promise<void> {
  await replaceDurably(fs, path, (tmp) => writeAndSync(fs, tmp, data, 'wx', mode));
}

/**
 * writeFileDurable for bytes that come as a stream (a download): each chunk written as it comes, so that no more
 * than a chunk is held; then fsynced and renamed into place. Resolves to the number of bytes written.
 */
export async function writeStreamDurable(fs: FsPromises, path: string, chunks: AsyncIterable<Uint8Array>, mode = 0o644): Promise<number> {
  let bytes = 0;
  await replaceDurably(fs, path, async (tmp) => {
    const handle = await fs.open(tmp, 'wx', mode);
    try {
      for await (const chunk of chunks) {
        await handle.write(chunk);
        bytes += chunk.length;
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
  return bytes;
}

/** `write` makes a temp file beside `path`, durable; it is renamed into place and the rename made durable. */
async function replaceDurably(fs: FsPromises, path: string, write: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = `${path}.tmp-${randomBytes(6).toString('hex')}`;
  try {
    await write(tmp);
    await fs.rename(tmp, path);
  } catch (err) {
    // A write or fsync that failed (a full disk) would otherwise leave the temp file behind for good.
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(fs, dirname(path));
}

/** Creates (or truncates, with flags "w") a file and returns only once its data is on disk. */
export async function writeAndSync(fs: FsPromises, path: string, data: Uint8Array | string, flags = 'wx', mode = 0o644): Promise<void> {
  const handle = await fs.open(path, flags, mode);
  try {
    await handle.write(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a rename or a new entry in `dir` durable; `whileSyncing` is called once the fsync is under way. */
export async function fsyncDir(fs: FsPromises, dir: string, whileSyncing?: () => void): Promise<void> {
  let handle;
  try {
    handle = await fs.open(dir, 'r');
  } catch (err) {
    // In-memory file systems (memfs in unit tests) cannot open directories; there is nothing to flush.
    if (errnoCode(err) === 'EISDIR') return;
    throw err;
  }
  try {
    const syncing = handle.sync();
    try {
      whileSyncing?.();
    } finally {
      await syncing;
    }
  } finally {
    await handle.close();
  }
}

/** What `op` gives, or null when the file it names is not there (ENOENT); any other error is thrown. */
export async function unlessMissing<T>(op: Promise<T>): Promise<T | null> {
  try {
    return await op;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
}

export async function pathExists(fs: FsPromises, path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return false;
    throw err;
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first failure after all settle. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i] as T);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.err;
  return results;
}

/** fsyncs every file and directory under `dir` (used once, on a freshly built repository, before it is renamed into place). */
export async function fsyncTree(fs: FsPromises, dir: string): Promise<void> {
  for (const name of await fs.readdir(dir)) {
    const path = `${dir}/${name}`;
    const stats = await fs.lstat(path);
    if (stats.isDirectory()) await fsyncTree(fs, path);
    else if (stats.isFile()) {
      const handle = await fs.open(path, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  }
  await fsyncDir(fs, dir);
}
