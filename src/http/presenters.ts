import type { ItemView } from '../domain/items.js';
import type { KeyRecord } from '../storage/keyStore.js';

/** The KnowledgeItem resource, fields in the specification's order. */
export interface KnowledgeItem {
  id: string;
  organizationId: string;
  path: string;
  content?: string;
  itemType: 'text' | 'file';
  fileKey: string | null;
  fileName: string | null;
  contentType: string | null;
  fileSize: number | null;
  requiredReadPermission: string;
  requiredWritePermission: string | null;
  createdAt: string;
  updatedAt: string;
}

export function presentItem(orgId: string, item: ItemView): KnowledgeItem {
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

/** A trash entry: the item without its content, plus who deleted it and when. */
export function presentTrashItem(orgId: string, item: ItemView): KnowledgeItem & { deletedAt: string | null; deletedBy: string | null } {
  return { ...presentItem(orgId, item), deletedAt: item.record.deletedAt, deletedBy: item.record.deletedBy };
}

/** A key as the admin API shows it: never its secret, never its hash. */
export function presentKey(key: KeyRecord): Omit<KeyRecord, 'hash' | 'orgId'> & { organizationId: string } {
  return {
    id: key.id,
    organizationId: key.orgId,
    name: key.name,
    role: key.role,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
  };
}
