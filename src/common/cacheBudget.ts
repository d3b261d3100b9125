/**
 * The memory the server's caches of contents may hold, all organizations together (KNOWLEDGE_CACHE_MB), and how
 * it is shared out among them. Each of these caches only saves a read or a serialization: a smaller one costs
 * speed, never an answer. What an organization needs to work (its item index, the trees its writes edit, its search
 * index) is not in it: that grows with the organization, and KNOWLEDGE_MAX_OPEN_ORGS bounds how many are held.
 */
export interface CacheShares {
  /** Serialized answers of item GETs, ready to send (http/itemAnswers.ts). */
  answers: number;
  /** Item contents as text, by blob id (storage/repo/repoCaches.ts). */
  contents: number;
  /** 64 KiB windows of pack files (storage/git/packReader.ts). */
  windows: number;
  /** Resolved delta bases (storage/git/objectDatabase.ts). */
  bases: number;
}

export type CacheName = keyof CacheShares;

const MIB = 1024 * 1024;

/**
 * 128 MiB: one organization's caches as they were when each had its own (answers 32 MiB, contents 64 MiB), with
 * pack windows and delta bases 16 MiB each, four times what each organization had.
 */
export const DEFAULT_CACHE_BYTES = 128 * MIB;

/** `total` shared out: a quarter for answers, half for contents, an eighth each for pack windows and delta bases. */
export function shareCacheBytes(total: number): CacheShares {
  const eighth = Math.floor(total / 8);
  return { answers: 2 * eighth, contents: 4 * eighth, windows: eighth, bases: eighth };
}
