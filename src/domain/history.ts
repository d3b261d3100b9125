import { createTwoFilesPatch } from 'diff';
import { systemClock, type Clock } from '../common/clock.js';
import { isObjectId } from '../storage/git/objectFormat.js';
import type { HistoryEntry } from '../storage/repo/historyLog.js';
import type { IndexEntry } from '../storage/repo/itemIndex.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { canSee, requireRole } from './access.js';
import { InvalidInput, ItemNotFound, VersionNotFound } from './errors.js';
import { rollbackFile } from './fileWrites.js';
import { putItem } from './items.js';
import { type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { validatePath } from './paths.js';
import type { VersionView } from './versionView.js';

export type { VersionView };

/** A query's commit id must name a commit on this organization's main (else 400, never a 500 or a lookup elsewhere). */
export function requireOwnCommit(repo: OrgRepo, commitId: string, field: 'ref' | 'since'): string {
  if (!isObjectId(commitId) || !repo.history.has(commitId)) {
    throw new InvalidInput({ reason: `${field} must be the full id of a commit of this organization` });
  }
  return commitId;
}

/** The item at `path`, live or in the trash, if the role may see it: its history is hidden exactly when it is. */
function visibleItem(repo: OrgRepo, actor: Actor, path: string): IndexEntry {
  requireRole(actor, 'knowledge:read');
  const entry = repo.get(validatePath(path));
  if (!entry || !canSee(actor, entry.record, repo)) throw new ItemNotFound({ path });
  return entry;
}

/** Versions are the item's commits in order; a purge ends an item, so it is never one of them. */
function versionsOf(repo: OrgRepo, entry: IndexEntry): readonly HistoryEntry[] {
  return repo.history.itemHistory(entry.record.id).filter((h) => h.item?.action !== 'purge');
}

function versionAt(repo: OrgRepo, entry: IndexEntry, version: number): HistoryEntry {
  const found = Number.isSafeInteger(version) && version >= 1 ? versionsOf(repo, entry)[version - 1] : undefined;
  if (!found) throw new VersionNotFound({ path: entry.record.path, version });
  return found;
}

export function getHistory(args: { repo: OrgRepo; actor: Actor; path: string }): VersionView[] {
  const entry = visibleItem(args.repo, args.actor, args.path);
  return versionsOf(args.repo, entry)
    .map((h, i) => ({
      version: i + 1,
      commitId: h.commitId,
      action: h.item?.action ?? 'update',
      message: h.message,
      author: { name: h.author.name, keyId: h.author.email },
      timestamp: new Date(h.timestamp * 1000).toISOString(),
    }))
    .reverse();
}

async function itemAtCommit(repo: OrgRepo, path: string, commitId: string): Promise<ItemView> {
  const then = await repo.readAt(commitId, path);
  if (!then) throw new ItemNotFound({ path });
  return { record: then.record, content: await repo.readContent(then), etag: `${then.blobOid.slice(0, 20)}${commitId.slice(0, 20)}` };
}

/** The item as one of its versions left it, read where it was then: a version from before a move is at the old path. */
function itemAtVersion(repo: OrgRepo, entry: IndexEntry, version: HistoryEntry): Promise<ItemView> {
  return itemAtCommit(repo, version.item?.path ?? entry.record.path, version.commitId);
}

/** `GET /items/{path}?version=n`: the item as its n-th version left it (1 = created). */
export async function getItemVersion(args: { repo: OrgRepo; actor: Actor; path: string; version: number }): Promise<ItemView> {
  const entry = visibleItem(args.repo, args.actor, args.path);
  return itemAtVersion(args.repo, entry, versionAt(args.repo, entry, args.version));
}

/**
 * `GET /items/{path}?ref=<commit>`: the item at that path as it was in that commit of
 * main. Hidden when the role may not see it then, or may not see what holds the path now.
 */
export async function getItemAtRef(args: { repo: OrgRepo; actor: Actor; path: string; ref: string }): Promise<ItemView> {
  const { repo, actor, ref } = args;
  requireRole(actor, 'knowledge:read');
  const path = validatePath(args.path);
  requireOwnCommit(repo, ref, 'ref');
  const now = repo.get(path);
  if (now && !canSee(actor, now.record, repo)) throw new ItemNotFound({ path });
  const item = await itemAtCommit(repo, path, ref);
  if (item.record.deletedAt !== null || !canSee(actor, item.record, repo)) throw new ItemNotFound({ path });
  return item;
}

/** A unified diff of the item's content between two versions. */
export async function diffVersions(args: { repo: OrgRepo; actor: Actor; path: string; from: number; to: number }): Promise<string> {
  const { repo } = args;
  const entry = visibleItem(repo, args.actor, args.path);
  const [a, b] = await Promise.all([args.from, args.to].map((n) => itemAtVersion(repo, entry, versionAt(repo, entry, n))));
  // Each side is named by the path it had then: across a move, the diff shows the rename as git does.
  const [pathA, pathB] = [a?.record.path ?? entry.record.path, b?.record.path ?? entry.record.path];
  return createTwoFilesPatch(`a/${pathA}`, `b/${pathB}`, a?.content ?? '', b?.content ?? '', `version ${args.from}`, `version ${args.to}`);
}

/**
 * A new commit whose content is that version's: history is never rewritten.
 * Goes through the same checks as a PUT (write permission on the item, trash, size).
 */
export async function rollback(args: {
  repo: OrgRepo;
  actor: Actor;
  path: string;
  version: number;
  maxContentBytes: number;
  clock?: Clock;
}): Promise<{ item: ItemView; commitId: string | null }> {
  const { repo, actor } = args;
  requireRole(actor, 'knowledge:write');
  const entry = visibleItem(repo, actor, args.path);
  const target = await itemAtVersion(repo, entry, versionAt(repo, entry, args.version));
  // A file item goes back to that version's bytes, name and type with its text (the bytes are still stored).
  if (target.record.itemType === 'file') return rollbackFile({ repo, actor, path: entry.record.path, target, version: args.version, clock: args.clock ?? systemClock });
  const { item, commitId } = await putItem({
    repo,
    actor,
    path: entry.record.path,
    content: target.content ?? '',
    message: `Roll back ${entry.record.path} to version ${args.version}`,
    maxContentBytes: args.maxContentBytes,
    clock: args.clock,
  });
  return { item, commitId };
}
