import type { IndexEntry } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { ItemIntent } from '../storage/repo/orgRepo.js';
import type { ScratchView } from '../storage/repo/writePipeline.js';
import { InvalidInput } from './errors.js';
import { authorOf, checkPathFree } from './items.js';
import type { Actor } from './keys.js';

/** An item as a revert wants it back: its record (path, permissions, live or in the trash) and its content. */
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
  if (target.record.itemType !== 'text' || entry.record.itemType !== 'text') {
    throw new InvalidInput({ reason: 'file items are not reverted: upload the file again' });
  }
  const wantLive = target.record.deletedAt === null;
  const samePath = entry.record.path === target.record.path;
  const sameContent = (): boolean =>
    entry.blobOid === target.blobOid &&
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
    const record = stamped({
      ...entry.record,
      requiredReadPermission: target.record.requiredReadPermission,
      requiredWritePermission: target.record.requiredWritePermission,
    });
    const action = entry.blobOid === target.blobOid ? 'permissions' : 'update';
    step({ mutation: 'put', path: entry.record.path, record, content: target.content, action, summary, author, when });
  }
  if (!wantLive && entry.record.deletedAt === null) trash();
  return intents;
}
