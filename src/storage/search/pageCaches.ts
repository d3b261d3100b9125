import type { Logger } from '../../common/log.js';

const KIB = 1024;

/** The most one index's page cache holds (KiB): what each had before the budget, so that one organization keeps it. */
export const MAX_PAGE_CACHE_KIB = 16 * KIB;

/** The least (KiB): 16 pages of 4 KiB, a B-tree's path from root to leaf several times over. */
export const MIN_PAGE_CACHE_KIB = 64;

/** KNOWLEDGE_SEARCH_CACHE_MB's default: sixteen organizations at the full 16 MiB each, an eighth of the 2 GiB heap. */
export const DEFAULT_PAGE_CACHES_BYTES = 256 * KIB * KIB;

/** SQLite's WebAssembly heap, every index of the process together: it cannot grow past this. */
export const SQLITE_HEAP_BYTES = 2 * KIB * KIB * KIB;

/**
 * What an open index keeps in that heap besides its page cache: its connection, schema and compiled statements
 * (0.20-0.22 MiB measured, over 300 small organizations each written to and searched, and 1,000 bare connections),
 * rounded up.
 */
export const INDEX_HEAP_BYTES = KIB * KIB / 4;

/**
 * How many indexes may be open at once before SQLite's heap is full, with `budgetBytes` of page caches and a
 * quarter GiB kept for transactions (a batch's pending terms) and checks: past it, every SQLite call fails with
 * "out of memory". 6,144 at the default budget.
 */
export function indexesThatFit(budgetBytes: number): number {
  return Math.max(0, Math.floor((SQLITE_HEAP_BYTES - budgetBytes - SQLITE_HEAP_BYTES / 8) / INDEX_HEAP_BYTES));
}

/** One index's place in the budget: what its cache may hold now, until it leaves. */
export interface PageCacheSeat {
  /** KiB this index's page cache may hold now (SQLite's `cache_size`, negated). */
  readonly kib: number;
  leave(): void;
}

interface Member {
  kib: number;
  readonly apply: (kib: number) => void;
}

/**
 * SQLite's page caches, every search index of the process together (KNOWLEDGE_SEARCH_CACHE_MB). Every index file
 * is opened by the one WebAssembly SQLite the process loads, and its heap is the process's: at most 2 GiB, and it
 * never shrinks. Each connection's cache was bounded (16 MiB) but not their sum: 125 organizations of ~5,000
 * items each, once each had read its file whole, held 2 GiB and every SQLite call of every organization failed with
 * "out of memory" from then on (`test/bench/searchPageCaches.ts`).
 *
 * The budget is shared equally among the open indexes, at most 16 MiB each: an index's cache only holds pages it
 * read, so one organization alone keeps what it kept. The share is a power of two (KiB), so it moves only when
 * the number of indexes doubles or halves, and each move sets every open index's `cache_size` (SQLite frees
 * what a cache holds beyond its new size at once). It is lowered as soon as an index joins (the sum never
 * exceeds the budget), and raised only once the indexes are a fifth fewer than the share allows, so that
 * organizations opened and closed one by one around a power of two do not move it back and forth.
 * Below the least share (64 KiB, more than 4,096 indexes at the default) the sum may exceed it.
 */
export class PageCaches {
  private readonly members = new Set<Member>();
  private share = MAX_PAGE_CACHE_KIB;

  constructor(
    /** Bytes all page caches may hold together. */
    readonly totalBytes: number,
    private readonly logger?: Logger,
  ) {
    if (!Number.isFinite(totalBytes) || totalBytes < MIN_PAGE_CACHE_KIB * KIB) throw new RangeError(`page caches: ${totalBytes} bytes is below one index's least share`);
    this.share = this.fitting(0);
  }

  /** KiB each index's cache may hold now. */
  get perIndexKib(): number {
    return this.share;
  }

  /** How many indexes share the budget. */
  get indexes(): number {
    return this.members.size;
  }

  /**
   * A new index's seat: its share is `seat.kib` (set it before using the connection); `apply` is called with its
   * new share whenever the share moves, until it leaves.
   */
  join(apply: (kib: number) => void): PageCacheSeat {
    const member: Member = { kib: 0, apply };
    this.members.add(member);
    const fits = this.fitting(this.members.size);
    if (fits < this.share) this.move(fits, member);
    member.kib = this.share;
    let left = false;
    return {
      get kib() {
        return member.kib;
      },
      leave: () => {
        if (left) return;
        left = true;
        this.members.delete(member);
        // Raised only with a fifth to spare (see the class comment).
        const fits = this.fitting(Math.ceil((this.members.size * 5) / 4));
        if (fits > this.share) this.move(fits);
      },
    };
  }

  /** The largest power-of-two share (KiB) that `count` indexes may each hold within the budget. */
  private fitting(count: number): number {
    const each = Math.floor(this.totalBytes / KIB / Math.max(1, count));
    if (each >= MAX_PAGE_CACHE_KIB) return MAX_PAGE_CACHE_KIB;
    if (each <= MIN_PAGE_CACHE_KIB) return MIN_PAGE_CACHE_KIB;
    return 2 ** Math.floor(Math.log2(each));
  }

  private move(kib: number, joining?: Member): void {
    this.share = kib;
    for (const member of this.members) {
      if (member === joining) continue;
      member.kib = kib;
      try {
        member.apply(kib);
      } catch (err) {
        // One connection that cannot take it must not fail the opening of another organization.
        this.logger?.warn('search page cache: could not set its size', { kib, error: String(err) });
      }
    }
    this.logger?.info('search page caches shared out', { indexes: this.members.size, kibEach: kib, mibInAll: Math.round(this.totalBytes / KIB / KIB) });
  }
}

/**
 * The budget of a process that was given none (tools that open one repository, tests): its default. The server
 * makes its own from KNOWLEDGE_SEARCH_CACHE_MB. Process-wide, as the heap it bounds is.
 */
export const processPageCaches = new PageCaches(DEFAULT_PAGE_CACHES_BYTES);
