import { CorruptStore } from '../errors.js';

/**
 * The per-item sidecar record, always committed in the same commit as its
 * content. Storage keeps permission values as opaque strings; the domain
 * decides what they mean. Trash and history need deletedAt/deletedBy and the
 * actor ids, so they are here from the first commit.
 */
export interface ItemRecord {
  id: string;
  path: string;
  itemType: 'text' | 'file';
  fileKey: string | null;
  fileName: string | null;
  contentType: string | null;
  fileSize: number | null;
  requiredReadPermission: string;
  requiredWritePermission: string;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  updatedBy: string;
  deletedAt: string | null;
  deletedBy: string | null;
}

const FOLDERS_ROOT = '.knowledge/folders';
const RULE_FILE = '.rule.json';

/** Where things live in an organization's tree. Item paths never start with ".", so these never collide. */
export const LAYOUT = {
  /** `.knowledge/items/<path>` holds the record of the item at `<path>` (live or in the trash). */
  recordPath: (path: string): string => `.knowledge/items/${path}`,
  /** `.trash/<path>` holds the content of a soft-deleted item (a file item's original bytes). */
  trashPath: (path: string): string => `.trash/${path}`,
  /**
   * `.knowledge/text/<path>` holds a file item's extracted text (its content), live or in the trash:
   * the original bytes keep the item's path, so a clone shows the real file there.
   */
  textPath: (path: string): string => `.knowledge/text/${path}`,
  /** `.knowledge/folders/<folder>/.rule.json`: a folder's rule ("." never starts a folder name, so it cannot collide). */
  folderRulePath: (folder: string): string => `${FOLDERS_ROOT}/${folder}/${RULE_FILE}`,
  /** The folder whose rule the file at `file` holds, or undefined when it holds none. */
  folderOfRulePath: (file: string): string | undefined =>
    file.startsWith(`${FOLDERS_ROOT}/`) && file.endsWith(`/${RULE_FILE}`) ? file.slice(FOLDERS_ROOT.length + 1, -RULE_FILE.length - 1) : undefined,
  /**
   * The item that a file of the tree belongs to (its content, its record, its
   * content in the trash, or a file item's text), or undefined for the store's own files.
   */
  itemOfPath: (file: string): string | undefined => {
    for (const root of ['.knowledge/items/', '.trash/', '.knowledge/text/']) if (file.startsWith(root)) return file.slice(root.length);
    return file.startsWith('.') ? undefined : file;
  },
  itemsRoot: '.knowledge/items',
  textRoot: '.knowledge/text',
  trashRoot: '.trash',
  /** Marks the repository as a knowledge store and names the format version. */
  configPath: '.knowledge/config.json',
} as const;

/**
 * The files of the tree that hold an item's content, given where its record says it is: a text
 * item's content at its path (or under `.trash/`); a file item's original bytes there (blob
 * `fileKey`) and its extracted text (`textOid`) under `.knowledge/text/`.
 */
export function contentFiles(record: ItemRecord, textOid: string): Array<{ path: string; oid: string }> {
  const at = record.deletedAt ? LAYOUT.trashPath(record.path) : record.path;
  if (record.itemType !== 'file' || record.fileKey === null) return [{ path: at, oid: textOid }];
  return [
    { path: at, oid: record.fileKey },
    { path: LAYOUT.textPath(record.path), oid: textOid },
  ];
}

/** The file of the tree that holds the item's content (text): what the index's `blobOid` names. */
export function contentPath(record: ItemRecord): string {
  if (record.itemType === 'file') return LAYOUT.textPath(record.path);
  return record.deletedAt ? LAYOUT.trashPath(record.path) : record.path;
}

export const STORE_CONFIG = { format: 'knowledge-store', version: 1 } as const;

const FIELDS: readonly (keyof ItemRecord)[] = [
  'id',
  'path',
  'itemType',
  'fileKey',
  'fileName',
  'contentType',
  'fileSize',
  'requiredReadPermission',
  'requiredWritePermission',
  'createdAt',
  'createdBy',
  'updatedAt',
  'updatedBy',
  'deletedAt',
  'deletedBy',
];

/** Fixed key order and a trailing newline, so identical records are identical blobs and diffs stay readable. */
export function serializeRecord(record: ItemRecord): string {
  const ordered: Record<string, unknown> = {};
  for (const field of FIELDS) ordered[field] = record[field];
  return `${JSON.stringify(ordered, null, 2)}\n`;
}

export function parseRecord(text: string, where: string): ItemRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CorruptStore({ where, reason: 'record is not valid JSON' });
  }
  return recordFromValue(value, where);
}

/** Checks a parsed value is a whole record, and returns it with the fields in their fixed order. */
export function recordFromValue(value: unknown, where: string): ItemRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CorruptStore({ where, reason: 'record is not a JSON object' });
  }
  const obj = value as Record<string, unknown>;
  const str = (k: string): boolean => typeof obj[k] === 'string';
  const strOrNull = (k: string): boolean => obj[k] === null || typeof obj[k] === 'string';
  const ok =
    ['id', 'path', 'requiredReadPermission', 'requiredWritePermission', 'createdAt', 'createdBy', 'updatedAt', 'updatedBy'].every(str) &&
    ['fileKey', 'fileName', 'contentType', 'deletedAt', 'deletedBy'].every(strOrNull) &&
    (obj.itemType === 'text' || obj.itemType === 'file') &&
    (obj.fileSize === null || Number.isSafeInteger(obj.fileSize));
  if (!ok) throw new CorruptStore({ where, reason: 'record is missing fields or has fields of the wrong type' });
  return Object.fromEntries(FIELDS.map((f) => [f, obj[f]])) as unknown as ItemRecord;
}

/** The requirements that `inherit` resolves to for items under a folder (admin API). */
export interface FolderRule {
  folder: string;
  requiredReadPermission: string;
  requiredWritePermission: string;
  updatedAt: string;
  updatedBy: string;
}

export function serializeFolderRule(rule: FolderRule): string {
  const { folder, requiredReadPermission, requiredWritePermission, updatedAt, updatedBy } = rule;
  return `${JSON.stringify({ folder, requiredReadPermission, requiredWritePermission, updatedAt, updatedBy }, null, 2)}\n`;
}

export function parseFolderRule(text: string, where: string): FolderRule {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CorruptStore({ where, reason: 'folder rule is not valid JSON' });
  }
  return folderRuleFromValue(value, where);
}

export function folderRuleFromValue(value: unknown, where: string): FolderRule {
  const obj = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const fields = ['folder', 'requiredReadPermission', 'requiredWritePermission', 'updatedAt', 'updatedBy'] as const;
  if (!fields.every((f) => typeof obj[f] === 'string')) throw new CorruptStore({ where, reason: 'folder rule is missing fields' });
  return Object.fromEntries(fields.map((f) => [f, obj[f]])) as unknown as FolderRule;
}
