import { systemClock, type Clock } from '../common/clock.js';
import { versionTag, type IndexEntry } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { ItemIntent, OrgRepo, RepoView } from '../storage/repo/orgRepo.js';
import { canSee, readable, requestedRequirement, requireRole, requirement, type RuleSource } from './access.js';
import { ContentTooLarge, Forbidden, InvalidInput, ItemInTrash, ItemKindConflict, ItemNotFound, PathConflict, PreconditionFailed } from './errors.js';
import { view, type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { ancestorFolders, validatePath } from './paths.js';
import { can, highest, READ_REQUIREMENTS, WRITE_REQUIREMENTS } from './permissions.js';
import { newRecord } from './records.js';
import { requireInScope } from './scopes.js';

/** An entity-tag condition as parsed from If-Match / If-None-Match: any version, or one of these. */
export type TagCondition = '*' | readonly string[];

export const MAX_MESSAGE_LENGTH = 1000;

/** A put as asked for: what `checkPut` checks before any repository state is looked at. */
export interface PutRequest {
  path: string;
  content: string;
  message?: string;
  requiredReadPermission?: string;
  requiredWritePermission?: string;
  ifMatch?: TagCondition;
  ifNoneMatch?: TagCondition;
  maxContentBytes: number;
}

export interface PutItemInput extends PutRequest {
  repo: OrgRepo;
  actor: Actor;
  clock?: Clock;
}

/** A put whose path, content, message and requested permissions passed their checks. */
export interface CheckedPut {
  path: string;
  content: string;
  message?: string;
  read?: string;
  write?: string;
  ifMatch?: TagCondition;
  ifNoneMatch?: TagCondition;
}

/** The checks of a put that need no repository state (the same for PUT, MCP and each put of POST /commits). */
export function checkPut(actor: Actor, input: PutRequest): CheckedPut {
  const { content } = input;
  requireRole(actor, 'knowledge:write');
  const path = validatePath(input.path);
  // Before anything stored is looked at: the answer outside the scopes depends on the path alone.
  requireInScope(actor, path);
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > input.maxContentBytes) throw new ContentTooLarge({ bytes, limit: input.maxContentBytes });
  if (!content.isWellFormed()) throw new InvalidInput({ reason: 'content must be valid Unicode (it has a lone surrogate)' });
  const message = input.message === undefined ? undefined : validateMessage(input.message);
  const read = requestedRequirement('requiredReadPermission', input.requiredReadPermission, READ_REQUIREMENTS);
  const write = requestedRequirement('requiredWritePermission', input.requiredWritePermission, WRITE_REQUIREMENTS);
  if (read !== undefined || write !== undefined) requireRole(actor, 'knowledge:admin');
  return { path, content, message, read, write, ifMatch: input.ifMatch, ifNoneMatch: input.ifNoneMatch };
}

/**
 * Decides a checked put against `v`: the intent that creates or updates the item, or none (with the
 * item as it is) when content and permissions equal what is stored. Throws the put's refusals.
 */
export function planPut(v: RepoView, actor: Actor, put: CheckedPut, when: Date): PutPlan {
  const { path, content, message, read, write } = put;
  const current = v.get(path);
  const author = authorOf(actor);
  if (!current) {
    checkNoConflict(v, path);
    if (put.ifMatch !== undefined) throw new PreconditionFailed({ path, reason: 'changed' });
    const record = newRecord({ path, actor, when, kind: TEXT_ITEM, read, write });
    // A new item gets the requirements it will have (folder rules included): a role may not
    // create what it could then neither see nor change, such as a file in an admin-only folder.
    requireChangeRights(actor, record, v);
    return { intent: { mutation: 'put', path, record, content, action: 'create', summary: message ?? `Create ${path}`, author, when }, created: true };
  }
  // An item the role may not read, live or in the trash, is absent for it: the answer says only
  // that the path is taken (the one thing a store cannot hide from a role that tries to create
  // there), never whether the item is live or deleted, nor the permission it needs.
  if (!canSee(actor, current.record, v)) throw pathTaken(path);
  if (current.record.deletedAt !== null) throw new ItemInTrash({ path });
  // A file item changes only by upload: its text alone would no longer match its original bytes.
  if (current.record.itemType === 'file') throw new ItemKindConflict({ path, itemType: 'file' });
  requireChangeRights(actor, current.record, v);
  const tag = versionTag(current);
  if (put.ifNoneMatch !== undefined && tagMatches(put.ifNoneMatch, tag)) throw new PreconditionFailed({ path, reason: 'exists' });
  if (put.ifMatch !== undefined && !tagMatches(put.ifMatch, tag)) throw new PreconditionFailed({ path, reason: 'changed' });
  const sameContent = v.contentMatches(current, content) && current.record.itemType === 'text';
  const nextRead = read ?? current.record.requiredReadPermission;
  const nextWrite = write ?? current.record.requiredWritePermission;
  const samePermissions = nextRead === current.record.requiredReadPermission && nextWrite === current.record.requiredWritePermission;
  if (sameContent && samePermissions) return { intent: null, unchanged: current };
  const record: ItemRecord = {
    ...current.record,
    ...TEXT_ITEM,
    requiredReadPermission: nextRead,
    requiredWritePermission: nextWrite,
    updatedAt: when.toISOString(),
    updatedBy: actor.keyId,
  };
  const action = sameContent ? 'permissions' : 'update';
  const summary = message ?? (sameContent ? `Change permissions of ${path}` : `Update ${path}`);
  return { intent: { mutation: 'put', path, record, content, action, summary, author, when }, created: false };
}

/** Creates the item or updates it; each change is one commit, an identical PUT none. */
export async function putItem(input: PutItemInput): Promise<{ item: ItemView; created: boolean; commitId: string | null }> {
  const { repo, actor, clock = systemClock } = input;
  const put = checkPut(actor, input);
  return writePut(repo, (v) => planPut(v, actor, put, clock()));
}

/** What a put's plan decides: the intent, or none with the item as it is. */
export type PutPlan = { intent: ItemIntent; created: boolean } | { intent: null; unchanged: IndexEntry };

/** Runs a put's plan in the write queue (decided there, on the state it will commit on) and answers with the item after it. */
export async function writePut(repo: OrgRepo, plan: (v: RepoView) => PutPlan): Promise<{ item: ItemView; created: boolean; commitId: string | null }> {
  let created = false;
  let unchanged: IndexEntry | undefined;
  const result = await repo.write((v) => {
    const decided = plan(v);
    if (decided.intent === null) {
      unchanged = decided.unchanged;
      return null;
    }
    created = decided.created;
    return decided.intent;
  });
  const entry = result.entry ?? unchanged;
  if (!entry) throw new Error('write finished without an entry');
  return { item: await view(repo, entry, true), created, commitId: result.commitId };
}

/** The checks of a delete that need no repository state: an admin, a valid path. */
export function checkDelete(actor: Actor, path: string): string {
  requireRole(actor, 'knowledge:admin');
  return validatePath(path);
}

/** Decides a soft delete against `v`: the content moves under `.trash/`, the record keeps who and when. */
export function planDelete(v: RepoView, actor: Actor, path: string, when: Date): ItemIntent {
  const current = v.get(path);
  if (!readable(actor, current, v)) throw new ItemNotFound({ path });
  const record: ItemRecord = { ...current.record, deletedAt: when.toISOString(), deletedBy: actor.keyId };
  return { mutation: 'trash', path, record, action: 'delete', summary: `Delete ${path}`, author: authorOf(actor), when };
}

/** Soft delete: the content moves under `.trash/`, the record keeps who and when. */
export async function deleteItem(args: { repo: OrgRepo; actor: Actor; path: string; clock?: Clock }): Promise<{ commitId: string }> {
  const { repo, actor, clock = systemClock } = args;
  const path = checkDelete(actor, args.path);
  const result = await repo.write((v) => planDelete(v, actor, path, clock()));
  if (!result.commitId) throw new Error('delete made no commit');
  return { commitId: result.commitId };
}

const TEXT_ITEM = { itemType: 'text', fileKey: null, fileName: null, contentType: null, fileSize: null } as const;

/** Commits are authored by the key: its name, and its id where git wants an email. */
export function authorOf(actor: Actor): { name: string; email: string } {
  return { name: actor.keyName, email: actor.keyId };
}

export function tagMatches(condition: TagCondition, tag: string): boolean {
  return condition === '*' || condition.includes(tag);
}

/**
 * Changing an item needs its write requirement, and seeing it first: a role never overwrites what it
 * cannot read. `record` is the item as it is, or as it would be (its path decides the folder rules).
 * THE write decision, scopes included: every route that changes an item (PUT, move's both ends, each
 * operation of POST /commits, rollback, MCP) passes here (a delete, admin only, needs `readable`), and a route added later must as well.
 */
export function requireChangeRights(actor: Actor, record: ItemRecord, rules: RuleSource): void {
  requireInScope(actor, record.path);
  const needed = highest(requirement(record, 'read', rules), requirement(record, 'write', rules));
  if (!can(actor.role, needed)) throw new Forbidden({ permission: needed });
}

/** The answer to a role that would create where an item it may not read already is. */
export function pathTaken(path: string): PathConflict {
  return new PathConflict({ path, conflictsWith: path, reason: `Path conflict: "${path}" is taken` });
}

/**
 * Refuses a path where no new item may go, with the answers a PUT creating there would get: an item
 * there (live: taken; in the trash: restore it first; hidden: only "taken"), or a conflict with a folder.
 */
export function checkPathFree(v: RepoView, actor: Actor, path: string): void {
  // Outside the scopes nothing may go, whatever is there: refused before anything stored is looked at.
  requireInScope(actor, path);
  const current = v.get(path);
  if (!current) return checkNoConflict(v, path);
  if (canSee(actor, current.record, v) && current.record.deletedAt !== null) throw new ItemInTrash({ path });
  throw pathTaken(path);
}

/** An item cannot sit where a folder is, nor under an item (git has one entry per name). */
export function checkNoConflict(v: Pick<RepoView, 'get' | 'hasEntriesUnder'>, path: string): void {
  for (const folder of ancestorFolders(path)) {
    if (v.get(folder)) {
      throw new PathConflict({ path, conflictsWith: folder, reason: `Path conflict: "${folder}" is an item, not a folder` });
    }
  }
  if (v.hasEntriesUnder(path)) {
    throw new PathConflict({ path, conflictsWith: path, reason: `Path conflict: "${path}" is a folder of other items` });
  }
}

export function validateMessage(message: string): string {
  if (message.trim().length === 0) throw new InvalidInput({ reason: 'message must not be empty' });
  if (message.length > MAX_MESSAGE_LENGTH) throw new InvalidInput({ reason: `message must be at most ${MAX_MESSAGE_LENGTH} characters` });
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(message) || !message.isWellFormed()) {
    throw new InvalidInput({ reason: 'message must not contain control characters' });
  }
  return message;
}
