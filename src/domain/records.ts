import { randomUUID } from 'node:crypto';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { Actor } from './keys.js';

/** The record of an item created now: a new id, its kind's fields (text, or a file's), `inherit` unless asked otherwise. */
export function newRecord(args: {
  path: string;
  actor: Actor;
  when: Date;
  kind: Pick<ItemRecord, 'itemType' | 'fileKey' | 'fileName' | 'contentType' | 'fileSize'>;
  read?: string;
  write?: string;
}): ItemRecord {
  const at = args.when.toISOString();
  return {
    id: randomUUID(),
    path: args.path,
    ...args.kind,
    requiredReadPermission: args.read ?? 'inherit',
    requiredWritePermission: args.write ?? 'inherit',
    createdAt: at,
    createdBy: args.actor.keyId,
    updatedAt: at,
    updatedBy: args.actor.keyId,
    deletedAt: null,
    deletedBy: null,
  };
}
