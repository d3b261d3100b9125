import type { CacheShares } from '../../common/cacheBudget.js';
import { Lru } from '../../common/lru.js';
import { objectCaches, type ObjectCaches } from '../git/objectDatabase.js';

/** Contents kept by a repository with caches of its own (a tool that opens one). */
const OWN_CONTENT_BYTES = 64 * 1024 * 1024;

/**
 * What repositories keep of what they read and write, beyond what they need to work: item contents as text, pack
 * windows, delta bases. An `OrgStore` shares one of these among all its organizations, so that what they keep
 * together stays within one budget (KNOWLEDGE_CACHE_MB) however many are open; each used to keep up to 72 MiB of
 * its own, 72 GiB for a thousand busy ones.
 *
 * Contents are keyed by blob id alone: a blob id names the same bytes in every repository, every text kept was
 * read through a check of its id or written under the id of its bytes, and a reader only ever asks for an id its
 * own repository's index gave it. Two organizations holding the same text (a template, say) keep it once.
 */
export class RepoCaches {
  readonly contents: Lru<string, string>;

  private constructor(
    contentBytes: number,
    readonly objects: ObjectCaches,
  ) {
    // A JavaScript string of n characters takes 2n bytes at most (1n when it is Latin-1), plus its header.
    this.contents = new Lru<string, string>(contentBytes, (s) => s.length * 2 + 64);
  }

  /** Caches within `shares`, for every repository of a store. */
  static shared(shares: Pick<CacheShares, 'contents' | 'windows' | 'bases'>): RepoCaches {
    return new RepoCaches(shares.contents, objectCaches({ windowBytes: shares.windows, baseBytes: shares.bases }));
  }

  /** The caches of one repository opened alone, as each had them before they were shared. */
  static ofOneRepository(): RepoCaches {
    return new RepoCaches(OWN_CONTENT_BYTES, objectCaches());
  }

  /** The bytes each cache holds now (GET /metrics). */
  bytes(): Pick<CacheShares, 'contents' | 'windows' | 'bases'> {
    return { contents: this.contents.weight, windows: this.objects.windows.bytes, bases: this.objects.bases.weight };
  }
}
