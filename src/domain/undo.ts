import type { IndexEntry } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { ItemIntent } from '../storage/repo/orgRepo.js';
import type { ScratchView } from '../storage/repo/writePipeline.js';
import { InvalidInput } from './errors.js';
import { authorOf, checkPathFree } from './items.js';
import type { Actor } from './keys.js';

/**
 * An item as a revert wants it back: its record (path, permissions, live or in the trash; a file item's
 * original bytes by their blob id) and its content (a file item's extracted text).
 */
export interface TargetState {
  record: ItemRecord;
  blobOid: string;
  content: string;
}

/**
 * The intents that take one item from `current` (as it is now, in `s`) back to `target` (null: the
 * item did not exist then, so it goes to the trash, where it stays restorable). In order: out of the
 * trash if it must be changed, back to its old path, its old content and permissions, into the
 * trash if it was there. Each intent is applied to `s`, so the next item's decision sees it.
 * Throws a domain error when the item cannot be taken back (its old path is taken now): the caller
 * reports that as a conflict.
 */
export function planUndo(args: {
  s: ScratchView;
  actor: Actor;
  current: IndexEntry;
  target: TargetState | null;
  summary: string;
  when: Date;
}): ItemIntent[] {
  const { s, actor, target, summary, when } = args;
  const author = authorOf(actor);
  const intents: ItemIntent[] = [];
  let entry = args.current;
  const step = (intent: ItemIntent): void => {
    const after = s.apply(intent);
    if (!after) throw new Error(`undo of ${intent.path} left no entry`);
    entry = after;
    intents.push(intent);
  };
  const stamped = (record: ItemRecord): ItemRecord => ({ ...record, updatedAt: when.toISOString(), updatedBy: actor.keyId });
  const trash = (): void => {
    const record = { ...entry.record, deletedAt: when.toISOString(), deletedBy: actor.keyId };
    step({ mutation: 'trash', path: entry.record.path, record, action: 'delete', summary, author, when });
  };

  if (target === null) {
    if (entry.record.deletedAt === null) trash();
    return intents;
  }
  // An item keeps its kind for life (contract §8), so this cannot happen unless a record was edited by hand.
  if (target.record.itemType !== entry.record.itemType) {
    throw new InvalidInput({ reason: `the item was a ${target.record.itemType} item then and is a ${entry.record.itemType} item now` });
  }
  const wantLive = target.record.deletedAt === null;
  const samePath = entry.record.path === target.record.path;
  const sameBytes = (): boolean => entry.blobOid === target.blobOid && entry.record.fileKey === target.record.fileKey;
  const sameContent = (): boolean =>
    sameBytes() &&
    entry.record.requiredReadPermission === target.record.requiredReadPermission &&
    entry.record.requiredWritePermission === target.record.requiredWritePermission;

  if (entry.record.deletedAt !== null && (wantLive || !samePath || !sameContent())) {
    const record = stamped({ ...entry.record, deletedAt: null, deletedBy: null });
    step({ mutation: 'restore', path: entry.record.path, record, action: 'restore', summary, author, when });
  }
  if (!samePath) {
    const from = entry.record.path;
    const to = target.record.path;
    // The old path may have been taken since (or be a folder now): then the item stays where it is.
    checkPathFree(s, actor, to);
    step({ mutation: 'move', from, path: to, record: stamped({ ...entry.record, path: to }), action: 'move', summary, author, when });
  }
  if (!sameContent()) {
    // A file item's content is its extracted text; its original bytes are the blob its record names, still
    // stored (history keeps every version), so the old record's file fields bring the old bytes back.
    const { fileKey, fileName, contentType, fileSize } = target.record;
    const record = stamped({
      ...entry.record,
      fileKey,
      fileName,
      contentType,
      fileSize,
      requiredReadPermission: target.record.requiredReadPermission,
      requiredWritePermission: target.record.requiredWritePermission,
    });
    const action = sameBytes() ? 'permissions' : 'update';
    step({ mutation: 'put', path: entry.record.path, record, content: target.content, action, summary, author, when });
  }
  if (!wantLive && entry.record.deletedAt === null) trash();
  return intents;
}
