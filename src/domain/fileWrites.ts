import type { Clock } from '../common/clock.js';
import { versionTag } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { OrgRepo, RepoView } from '../storage/repo/orgRepo.js';
import { canSee } from './access.js';
import { ItemInTrash, ItemKindConflict, PreconditionFailed } from './errors.js';
import { authorOf, checkNoConflict, pathTaken, requireChangeRights, tagMatches, writePut, type PutPlan, type TagCondition } from './items.js';
import { type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { newRecord } from './records.js';

/** What a file put writes: the record's file fields (its bytes already stored as blob `fileKey`) and the text. */
export interface FilePut {
  path: string;
  text: string;
  fileKey: string;
  fileName: string;
  contentType: string;
  fileSize: number;
  message?: string;
  ifMatch?: TagCondition;
  ifNoneMatch?: TagCondition;
}

/**
 * A rollback of a file item at `path` (where it is now): the version's bytes (already stored), name, type and
 * text, as a new commit. Not the version's own path: an item moved since would be written back where it was.
 */
export function rollbackFile(args: { repo: OrgRepo; actor: Actor; path: string; target: ItemView; version: number; clock: Clock }): Promise<{ item: ItemView; created: boolean; commitId: string | null }> {
  const { record, content } = args.target;
  const { path } = args;
  if (record.fileKey === null || record.fileName === null || record.contentType === null || record.fileSize === null) {
    throw new ItemKindConflict({ path, itemType: 'text' });
  }
  const put: FilePut = {
    path,
    text: content ?? '',
    fileKey: record.fileKey,
    fileName: record.fileName,
    contentType: record.contentType,
    fileSize: record.fileSize,
    message: `Roll back ${path} to version ${args.version}`,
  };
  return writeFilePut(args.repo, args.actor, put, args.clock);
}

/** Writes a file put as one commit (none when nothing changes). */
export function writeFilePut(repo: OrgRepo, actor: Actor, put: FilePut, clock: Clock): Promise<{ item: ItemView; created: boolean; commitId: string | null }> {
  return writePut(repo, (v) => planFilePut(v, actor, put, clock()));
}

/** Decides a file put against `v`, as `planPut` does a text one: the intent, none when nothing changes, or the refusal. */
function planFilePut(v: RepoView, actor: Actor, put: FilePut, when: Date): PutPlan {
  const { path } = put;
  const fields = { itemType: 'file', fileKey: put.fileKey, fileName: put.fileName, contentType: put.contentType, fileSize: put.fileSize } as const;
  const author = authorOf(actor);
  const base = { mutation: 'put', path, content: put.text, author, when } as const;
  const current = v.get(path);
  const at = when.toISOString();
  if (!current) {
    checkNoConflict(v, path);
    if (put.ifMatch !== undefined) throw new PreconditionFailed({ path, reason: 'changed' });
    const record = newRecord({ path, actor, when, kind: fields });
    requireChangeRights(actor, record, v);
    return { intent: { ...base, record, action: 'create', summary: put.message ?? `Create ${path}` }, created: true };
  }
  if (!canSee(actor, current.record, v)) throw pathTaken(path);
  if (current.record.deletedAt !== null) throw new ItemInTrash({ path });
  if (current.record.itemType !== 'file') throw new ItemKindConflict({ path, itemType: 'text' });
  requireChangeRights(actor, current.record, v);
  const tag = versionTag(current);
  if (put.ifNoneMatch !== undefined && tagMatches(put.ifNoneMatch, tag)) throw new PreconditionFailed({ path, reason: 'exists' });
  if (put.ifMatch !== undefined && !tagMatches(put.ifMatch, tag)) throw new PreconditionFailed({ path, reason: 'changed' });
  const r = current.record;
  const same = r.fileKey === put.fileKey && r.fileName === put.fileName && r.contentType === put.contentType && v.contentMatches(current, put.text);
  if (same) return { intent: null, unchanged: current };
  const record: ItemRecord = { ...r, ...fields, updatedAt: at, updatedBy: actor.keyId };
  return { intent: { ...base, record, action: 'update', summary: put.message ?? `Update ${path}` }, created: false };
}
