import type { ItemRecord } from '../../src/storage/repo/itemRecord.js';

export const TEST_KEY_ID = 'key_0123456789abcdef';
let serial = 0;

/**
 * A live text item's record as the store writes it, for storage tests that
 * build write intents by hand: a fresh UUID-shaped id each call; `extra` overrides any field.
 */
export function textRecord(path: string, extra: Partial<ItemRecord> & { when?: Date } = {}): ItemRecord {
  serial++;
  const { when, ...fields } = extra;
  const at = (when ?? new Date('2024-03-01T10:00:00.000Z')).toISOString();
  return {
    id: `00000000-0000-4000-8000-${String(serial).padStart(12, '0')}`,
    path,
    itemType: 'text',
    fileKey: null,
    fileName: null,
    contentType: null,
    fileSize: null,
    requiredReadPermission: 'inherit',
    requiredWritePermission: 'inherit',
    createdAt: at,
    createdBy: TEST_KEY_ID,
    updatedAt: at,
    updatedBy: TEST_KEY_ID,
    deletedAt: null,
    deletedBy: null,
    ...fields,
  };
}

/** The error a promise rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}
