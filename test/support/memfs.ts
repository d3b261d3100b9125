import { Volume } from 'memfs';
import type { FsPromises } from '../../src/storage/fs/fs.js';

/** A fresh memfs volume seen through the storage layer's `FsPromises` (unit tests of storage). */
export function memoryFs(): { vol: Volume; fs: FsPromises } {
  const vol = new Volume();
  return { vol, fs: vol.promises as unknown as FsPromises };
}
