import { view } from '../domain/items.js';
import { versionTag, type IndexEntry } from '../storage/repo/itemIndex.js';
import { Lru } from '../common/lru.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { formatEtag, itemEnvelope } from './presenters.js';

/** The answer to a successful GET of one version of an item, serialized: what does not change until the item does. */
export interface ItemAnswer {
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

/** Bytes of answers kept by default: every item of a 10,000-item store of ~1 KB answers, or the hot part of a larger one. */
export const ITEM_ANSWER_BYTES = 32 * 1024 * 1024;
/** What an answer costs besides its body: the key, the headers' strings, the record. */
const OVERHEAD_BYTES = 256;

/**
 * Item answers by organization, path and version tag, least recently used dropped past `maxBytes`.
 *
 * The body depends on the item's version and the caller's organization only: the envelope carries the record's
 * public fields (requiredReadPermission and requiredWritePermission are the item's, not the caller's), the
 * content and the organization id, and nothing of the key, its role or its scopes (those decide whether the
 * item may be read at all, checked on every request before this is asked). The version tag names the content
 * blob and the record blob, so a commit that changes either makes a new key: nothing is ever invalidated, and a
 * reader never sees an answer older than the index entry it was given. Superseded versions age out.
 */
export class ItemAnswers {
  private readonly answers: Lru<string, ItemAnswer>;

  constructor(maxBytes: number = ITEM_ANSWER_BYTES) {
    this.answers = new Lru(maxBytes, (a) => a.bytes + OVERHEAD_BYTES);
  }

  async of(orgId: string, repo: OrgRepo, entry: IndexEntry): Promise<ItemAnswer> {
    const etag = versionTag(entry);
    const key = `${orgId}\0${entry.record.path}\0${etag}`;
    const kept = this.answers.get(key);
    if (kept) return kept;
    const body = JSON.stringify(itemEnvelope(orgId, await view(repo, entry, true)));
    const bytes = Buffer.byteLength(body);
    const answer: ItemAnswer = { etag, etagHeader: formatEtag(etag), body, bytes, lengthHeader: String(bytes) };
    this.answers.set(key, answer);
    return answer;
  }
}
