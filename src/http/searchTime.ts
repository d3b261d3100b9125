import { SearchTimeSpent } from './httpErrors.js';
import { TokenBuckets } from './middleware/rateLimit.js';

/** A key's share of search time: `msPerMinute` sustained (0: no limit), `burstMs` at once. */
export interface SearchTimePolicy {
  msPerMinute: number;
  burstMs: number;
}

/**
 * Search time per key. The request quota counts requests, and a search may cost a hundred GET items (the
 * commonest words, a short prefix: 60-120 ms each, README, Search): one key repeating those could keep the
 * server's one event loop busy at a rate its request quota allows. So each key also has a bucket of
 * milliseconds: a search is let in while the key's bucket holds any, and then charged what it took (its cost
 * is known only afterwards). Past it the key's searches are 429 until the bucket refills; its other
 * requests are not touched. The REST route and the MCP tool draw on the same buckets.
 */
export class SearchTime {
  private readonly buckets: TokenBuckets | undefined;
  private readonly refused: () => void;

  /** `refused` is told of each refusal (the metrics' counter); `now`, a monotonic clock in ms, is for tests. */
  constructor(policy: SearchTimePolicy, options: { now?: () => number; refused?: () => void } = {}) {
    this.buckets = policy.msPerMinute > 0 ? new TokenBuckets({ perMinute: policy.msPerMinute, burst: policy.burstMs }, { now: options.now }) : undefined;
    this.refused = options.refused ?? (() => {});
  }

  /** Runs `search` for `keyId` unless the key's search time is spent (SearchTimeSpent), and charges it its `ms`. */
  async spend<T extends { ms: number }>(keyId: string, search: () => Promise<T>): Promise<T> {
    if (!this.buckets) return search();
    const { allowed, quota } = this.buckets.admit(keyId);
    if (!allowed) {
      this.refused();
      throw new SearchTimeSpent({ quota });
    }
    const answer = await search();
    this.buckets.spend(keyId, answer.ms);
    return answer;
  }
}
