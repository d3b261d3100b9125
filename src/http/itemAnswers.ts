import { view } from '../domain/itemReads.js';
import type { IndexEntry } from '../storage/repo/itemIndex.js';
import { DEFAULT_SHARES } from '../common/cacheBudget.js';
import { Lru } from '../common/lru.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { formatEtag, itemEnvelope } from './presenters.js';

/** The answer to a successful GET of one version of an item, serialized: what does not change until the item does. */
export interface ItemAnswer {
  /** The organization whose envelope it is. */
  orgId: string;
  /** The version tag (unquoted), for If-None-Match. */
  etag: string;
  etagHeader: string;
  /**
   * The JSON envelope, as Koa would send it: text, as Koa sends it, since Node then writes the header and the body
   * as one string in one write (a Buffer body goes out as a second chunk, through writev, at a higher cost).
   */
  body: string;
  /** Its length in UTF-8 bytes. */
  bytes: number;
  lengthHeader: string;
}

/** What an answer costs besides its body: the entry it is kept under (and its record), the headers' strings. */
const OVERHEAD_BYTES = 512;

/**
 * Item answers by index entry, least recently used dropped past `maxBytes`.
 *
 * The body depends on the item's version and the caller's organization only: the envelope carries the record's
 * public fields (requiredReadPermission and requiredWritePermission are the item's, not the caller's), the
 * content and the organization id, and nothing of the key, its role or its scopes (those decide whether the
 * item may be read at all, checked on every request before this is asked). An index entry is one version of one
 * item of one organization's index, never changed once made (its fields are readonly; a commit that changes the
 * content or the record puts a new entry in the index), so the entry itself is the key: nothing is ever
 * invalidated, and a reader never sees an answer older than the entry it was given. Superseded versions age out.
 * (Keyed by a string of organization, path and version tag, building and hashing that string cost about a
 * microsecond a GET; an object is looked up by identity.)
 */
export class ItemAnswers {
  private readonly answers: Lru<IndexEntry, ItemAnswer>;

  /**
   * `maxBytes`: a server gives its share of KNOWLEDGE_CACHE_MB (common/cacheBudget.ts); the default share, 32 MiB,
   * holds every answer of a 10,000-item store of ~1 KB items, or the hot part of a larger one.
   */
  constructor(maxBytes: number = DEFAULT_SHARES.answers) {
    this.answers = new Lru(maxBytes, (a) => a.bytes + OVERHEAD_BYTES);
  }

  /** The bytes of the answers kept now (GET /metrics). */
  get bytes(): number {
    return this.answers.weight;
  }

  /** The answer kept for `entry`, if any: no promise to wait for on the fast path's usual case. */
  kept(orgId: string, entry: IndexEntry): ItemAnswer | undefined {
    const kept = this.answers.get(entry);
    // An entry is one organization's; the check costs nothing and keeps an envelope from ever naming another.
    return kept?.orgId === orgId ? kept : undefined;
  }

  /** The answer for `entry` of `repo` (organization `orgId`), made and kept when it is not kept yet. */
  async of(orgId: string, repo: OrgRepo, entry: IndexEntry): Promise<ItemAnswer> {
    const kept = this.kept(orgId, entry);
    if (kept) return kept;
    const item = await view(repo, entry, true);
    const body = JSON.stringify(itemEnvelope(orgId, item));
    const bytes = Buffer.byteLength(body);
    const etag = item.etag;
    const answer: ItemAnswer = { orgId, etag, etagHeader: formatEtag(etag), body, bytes, lengthHeader: String(bytes) };
    this.answers.set(entry, answer);
    return answer;
  }
}
