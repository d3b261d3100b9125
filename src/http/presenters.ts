import { InvalidInput } from '../domain/errors.js';
import type { ItemView } from '../domain/itemReads.js';
import type { SearchResult } from '../domain/search.js';
import type { KeyRecord } from '../storage/keys/keyStore.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';

/**
 * The KnowledgeItem resource: the stored record's public fields, the organization, and the content
 * when asked for. Field order on the wire is `presentItem`'s, as README (The API) lists them.
 */
export type KnowledgeItem = Pick<
  ItemRecord,
  'id' | 'path' | 'itemType' | 'fileKey' | 'fileName' | 'contentType' | 'fileSize' | 'requiredReadPermission' | 'createdAt' | 'updatedAt'
> & {
  organizationId: string;
  content?: string;
  requiredWritePermission: string | null;
};

export function presentItem(orgId: string, item: Pick<ItemView, 'record' | 'content'>): KnowledgeItem {
  const { record } = item;
  const out: KnowledgeItem = { id: record.id, organizationId: orgId, path: record.path } as KnowledgeItem;
  if (item.content !== undefined) out.content = item.content;
  return Object.assign(out, {
    itemType: record.itemType,
    fileKey: record.fileKey,
    fileName: record.fileName,
    contentType: record.contentType,
    fileSize: record.fileSize,
    requiredReadPermission: record.requiredReadPermission,
    requiredWritePermission: record.requiredWritePermission,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  });
}

/** The envelope of an answer that holds one item (GET, PUT): the same object for Koa's routes and the fast GET path. */
export function itemEnvelope(orgId: string, item: Pick<ItemView, 'record' | 'content'>): { success: true; data: { item: KnowledgeItem } } {
  return { success: true, data: { item: presentItem(orgId, item) } };
}

/** Pieces of the list body are sent once they reach this many characters (few writes for small items, small pieces for big ones). */
const LIST_PIECE_CHARS = 64 * 1024;

/**
 * The list envelope `{"success":true,"data":{"items":[...]}}` (plus `nextCursor` when paging) as
 * text produced piece by piece while `items` are read: byte for byte what `JSON.stringify` gives
 * for the whole object, without ever holding the whole of it, so memory stays bounded however long the list.
 */
export async function* itemListBody(args: {
  orgId: string;
  items: AsyncIterable<ItemView>;
  nextCursor?: string | null;
}): AsyncGenerator<string, void, undefined> {
  let piece = '{"success":true,"data":{"items":[';
  let first = true;
  for await (const item of args.items) {
    const json = JSON.stringify(presentItem(args.orgId, item));
    if (!first) piece += ',';
    first = false;
    if (json.length >= LIST_PIECE_CHARS) {
      // A big item goes out as it is: gluing it to the piece before it would only copy it once more.
      yield piece;
      yield json;
      piece = '';
      continue;
    }
    piece += json;
    if (piece.length >= LIST_PIECE_CHARS) {
      yield piece;
      piece = '';
    }
  }
  piece += ']';
  if (args.nextCursor !== undefined) piece += `,"nextCursor":${JSON.stringify(args.nextCursor)}`;
  yield `${piece}}}`;
}

/** Strong entity tags, quoted as HTTP wants them. */
export const formatEtag = (tag: string): string => `"${tag}"`;

/** Parses If-Match / If-None-Match: `*`, or a list of (possibly weak) quoted tags. */
export function parseEtagCondition(header: string): '*' | string[] | undefined {
  const value = header.trim();
  if (value === '') return undefined;
  if (value === '*') return '*';
  return value
    .split(',')
    .map((t) => t.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1'))
    .filter((t) => t.length > 0);
}

/**
 * An ETag condition given as a body field or tool argument (`ifMatch`, `if_match`), read as an If-Match
 * header is: quoted or not, weak or strong, `*`, or a list. Absent is no condition; a blank one is refused,
 * never taken for "no condition".
 */
export function etagConditionField(value: string | undefined, name: string): '*' | string[] | undefined {
  if (value === undefined) return undefined;
  const condition = parseEtagCondition(value);
  if (condition === undefined) throw new InvalidInput({ reason: `${name} must be an ETag` });
  return condition;
}

/** A trash entry: the item without its content, plus who deleted it and when. */
export function presentTrashItem(orgId: string, item: ItemView): KnowledgeItem & { deletedAt: string | null; deletedBy: string | null } {
  return { ...presentItem(orgId, item), deletedAt: item.record.deletedAt, deletedBy: item.record.deletedBy };
}

/** A key as the admin API shows it: never its secret, never its hash. */
export function presentKey(key: KeyRecord): Omit<KeyRecord, 'hash' | 'orgId' | 'scopes'> & { organizationId: string; scopes: string[] | null } {
  return {
    id: key.id,
    organizationId: key.orgId,
    name: key.name,
    role: key.role,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
    // null: the whole organization (a key without scopes).
    scopes: key.scopes ?? null,
  };
}

/** A search result: the item without its content, how well it matched, and the snippet. */
export function presentSearchResult(orgId: string, result: SearchResult): { path: string; score: number; snippet: string; item: KnowledgeItem } {
  return { path: result.record.path, score: result.score, snippet: result.snippet, item: presentItem(orgId, result) };
}
