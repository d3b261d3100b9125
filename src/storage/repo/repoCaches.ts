import { DEFAULT_SHARES, type CacheShares } from '../../common/cacheBudget.js';
import { Lru } from '../../common/lru.js';
import { objectCaches, type ObjectCaches } from '../git/objectDatabase.js';

/**
 * What repositories keep of what they read and write, beyond what they need to work: item contents as text, pack
 * windows, delta bases. An `OrgStore` shares one of these among all its organizations, so that what they keep
 * together stays within one budget (KNOWLEDGE_CACHE_MB) however many are open; each used to keep up to 72 MiB of
 * its own, 72 GiB for a thousand busy ones.
 *
 * Contents are keyed by organization and blob id (OrgRepo): the same text in two organizations is kept twice. By
 * blob id alone it would be kept once, and that would be safe for the answers (an id names the same bytes in every
 * repository), but one organization could then tell from the time a read of its own item takes whether another
 * had read the same text lately: a way to confirm what another organization holds, which tenants must not have.
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

  /** Caches within the default budget's shares: an OrgStore's unless given, a repository's opened alone. */
  static atDefault(): RepoCaches {
    return RepoCaches.shared(DEFAULT_SHARES);
  }

  /** The bytes each cache holds now (GET /metrics). */
  bytes(): Pick<CacheShares, 'contents' | 'windows' | 'bases'> {
    return { contents: this.contents.weight, windows: this.objects.windows.bytes, bases: this.objects.bases.weight };
  }
}
