import { isIPv6 } from 'node:net';
import type { Middleware, ParameterizedContext } from 'koa';
import { isKnowledgeError } from '../../common/errors.js';
import { TooManyRequests, type RateQuota } from '../httpErrors.js';
import type { AppState } from '../state.js';

/** A limit: `perMinute` sustained, `burst` at once (the bucket's size). */
export interface RatePolicy {
  perMinute: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, monotonic). */
  at: number;
}

/**
 * Token buckets by name (per key, and per client address for failed
 * authentication). A bucket holds `burst` tokens and refills at `perMinute`;
 * a request takes one. Memory stays bounded: buckets are kept in order of last
 * use, and the idlest ones are dropped as soon as they have refilled (a full
 * bucket is the same as no bucket), a few per call; past `maxBuckets` the
 * idlest goes regardless.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  private readonly maxBuckets: number;
  private readonly now: () => number;

  constructor(
    readonly policy: RatePolicy,
    options: { maxBuckets?: number; now?: () => number } = {},
  ) {
    this.perMs = policy.perMinute / 60_000;
    this.maxBuckets = options.maxBuckets ?? 100_000;
    this.now = options.now ?? (() => performance.now());
  }

  get size(): number {
    return this.buckets.size;
  }

  /** The quota left to `name`, without spending any. */
  peek(name: string): RateQuota {
    const bucket = this.buckets.get(name);
    const tokens = bucket ? this.refill(bucket, this.now()) : this.policy.burst;
    return this.quota(tokens);
  }

  /** Spends one token when there is one; says whether there was, and what is left. */
  take(name: string): { allowed: boolean; quota: RateQuota } {
    const bucket = this.touch(name);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return { allowed, quota: this.quota(bucket.tokens) };
  }

  /**
   * For a cost known only afterwards (search time): whether `name` has anything left, nothing spent yet.
   * `spend` then charges what it cost.
   */
  admit(name: string): { allowed: boolean; quota: RateQuota } {
    const bucket = this.touch(name);
    return { allowed: bucket.tokens > 0, quota: this.quota(bucket.tokens) };
  }

  /**
   * Charges `amount`, which may take the bucket below empty: the debt is paid back by waiting. It stops at one
   * burst's worth, so that requests admitted together and charged after cannot lock a name out for longer.
   */
  spend(name: string, amount: number): void {
    const bucket = this.touch(name);
    bucket.tokens = Math.max(-this.policy.burst, bucket.tokens - amount);
  }

  /** `name`'s bucket brought up to date and made the most recently used (a full one for a new name). */
  private touch(name: string): Bucket {
    const now = this.now();
    this.sweep(now);
    let bucket = this.buckets.get(name);
    if (bucket) {
      bucket.tokens = this.refill(bucket, now);
      this.buckets.delete(name); // re-inserted last: the map stays in order of last use
    } else {
      bucket = { tokens: this.policy.burst, at: now };
      if (this.buckets.size >= this.maxBuckets) this.dropIdlest();
    }
    bucket.at = now;
    this.buckets.set(name, bucket);
    return bucket;
  }

  private refill(bucket: Bucket, now: number): number {
    return Math.min(this.policy.burst, bucket.tokens + (now - bucket.at) * this.perMs);
  }

  /** Drops up to four of the idlest buckets that have refilled completely. */
  private sweep(now: number): void {
    for (let i = 0; i < 4; i++) {
      const first = this.buckets.entries().next();
      if (first.done) return;
      const [name, bucket] = first.value;
      if (this.refill(bucket, now) < this.policy.burst) return;
      this.buckets.delete(name);
    }
  }

  private dropIdlest(): void {
    const first = this.buckets.keys().next();
    if (!first.done) this.buckets.delete(first.value);
  }

  private quota(tokens: number): RateQuota {
    const { burst } = this.policy;
    const missing = burst - tokens;
    return {
      limit: burst,
      remaining: Math.max(0, Math.floor(tokens)),
      resetSeconds: missing <= 0 ? 0 : Math.ceil(missing / this.perMs / 1000),
      retryAfterSeconds: tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / this.perMs / 1000)),
    };
  }
}

/**
 * IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), on answers and refusals alike, appended to
 * a flat list of names and values (the fast GET's writeHead takes that form as it is).
 */
export function pushRateLimitFields(fields: string[], quota: RateQuota): void {
  fields.push('RateLimit-Limit', String(quota.limit), 'RateLimit-Remaining', String(quota.remaining), 'RateLimit-Reset', String(quota.resetSeconds));
}

/** The same fields as an object, for Koa's `ctx.set`. */
export function rateLimitHeaders(quota: RateQuota): Record<string, string> {
  const fields: string[] = [];
  pushRateLimitFields(fields, quota);
  const headers: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) headers[fields[i] as string] = fields[i + 1] as string;
  return headers;
}

/**
 * The address a client is counted under: Koa's `ctx.ip` (the socket's peer, or
 * with KNOWLEDGE_TRUST_PROXY the X-Forwarded-For entry the trusted proxy added), an IPv4-mapped IPv6 address as IPv4, and IPv6 by its /64, the
 * block a single host is usually given.
 */
export function clientAddress(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1] as string;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const full = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${full.slice(0, 4).map((h) => h.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** A refusal counts as a failed authentication when a credential was offered (git asks first without one). */
function failedAuthentication(ctx: ParameterizedContext<AppState>, err: unknown): boolean {
  if (!isKnowledgeError(err)) return false;
  return err.code === 'UNAUTHORIZED' || (err.code === 'GIT_AUTH_REQUIRED' && ctx.get('Authorization') !== '');
}

/**
 * Counts each failed authentication (a 401) against the client's address, and
 * once the address has spent its allowance answers its failures 429 instead of
 * 401. A request with a valid key is never refused here: many clients
 * share an address (a NAT, an office, a CI runner), and one of them with a typo
 * must not lock out the rest. The key is therefore always looked at; that costs
 * a hash and a map lookup, and keys are 256 random bits, so what this limit
 * bounds is a misbehaving client's noise, not the odds of guessing a key.
 */
export function limitFailedAuthentication(policy: RatePolicy): Middleware<AppState> {
  if (policy.perMinute <= 0) return (_ctx, next) => next();
  const buckets = new TokenBuckets(policy);
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (failedAuthentication(ctx, err)) {
        const { allowed, quota } = buckets.take(clientAddress(ctx.ip));
        if (!allowed) throw new TooManyRequests({ scope: 'address', quota });
      }
      throw err;
    }
  };
}

/** The per-key buckets of a policy, or none when the limit is off (0 per minute). */
export function perKeyBuckets(policy: RatePolicy): TokenBuckets | undefined {
  return policy.perMinute > 0 ? new TokenBuckets(policy) : undefined;
}

/**
 * Spends one request of the authenticated key's quota (429 when none is left); sets the RateLimit fields.
 * `buckets` are shared with the fast GET path, so both spend the same quota.
 */
export function limitPerKey(buckets: TokenBuckets | undefined): Middleware<AppState> {
  if (!buckets) return (_ctx, next) => next();
  return async (ctx, next) => {
    const { allowed, quota } = buckets.take(ctx.state.actor.keyId);
    if (!allowed) throw new TooManyRequests({ scope: 'key', quota });
    ctx.set(rateLimitHeaders(quota));
    await next();
  };
}
