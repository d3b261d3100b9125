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

/** Every cache the budget bounds, in the order /metrics lists them. */
export const CACHE_NAMES: readonly CacheName[] = ['answers', 'contents', 'windows', 'bases'];

const MIB = 1024 * 1024;

/** The parts of the budget, in 26ths. */
const PARTS: CacheShares = { answers: 8, contents: 16, windows: 1, bases: 1 };
const WHOLE = 26;

/**
 * 104 MiB: 4 MiB a part, which is what one organization kept when each had caches of its own (answers 32 MiB,
 * contents 64 MiB, pack windows and delta bases 4 MiB each). A server with one organization keeps what it kept.
 */
export const DEFAULT_CACHE_BYTES = 104 * MIB;

/** `total` shared out in 26ths: 8 for answers, 16 for contents, 1 each for pack windows and delta bases. */
export function shareCacheBytes(total: number): CacheShares {
  const part = Math.floor(total / WHOLE);
  return { answers: PARTS.answers * part, contents: PARTS.contents * part, windows: PARTS.windows * part, bases: PARTS.bases * part };
}

/** The shares of the default budget: also what a tool that opens one repository (or a test) keeps by default. */
export const DEFAULT_SHARES: Readonly<CacheShares> = shareCacheBytes(DEFAULT_CACHE_BYTES);
