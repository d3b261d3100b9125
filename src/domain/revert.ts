import { systemClock, type Clock } from '../common/clock.js';
import { isKnowledgeError } from '../common/errors.js';
import { mapLimit } from '../storage/fs/durable.js';
import type { KeyStore } from '../storage/keys/keyStore.js';
import { isObjectId } from '../storage/git/objectFormat.js';
import { itemChanges, type HistoryEntry, type ItemChange } from '../storage/repo/historyLog.js';
import { versionTag, type IndexEntry } from '../storage/repo/itemIndex.js';
import { serializeRecord } from '../storage/repo/itemRecord.js';
import type { ItemIntent, OrgRepo, RepoView } from '../storage/repo/orgRepo.js';
import { requireRole } from './access.js';
import { InvalidInput, KeyNotFound } from './errors.js';
import { authorOf } from './items.js';
import type { Actor } from './keys.js';
import { requireUnscoped } from './scopes.js';
import { planUndo, type TargetState } from './undo.js';

/** What `POST /revert` undoes: one commit, or every commit one key made since a time. */
export type RevertTarget = { commitId: string } | { keyId: string; since: string };

/** An item the revert left alone: where it is now, why, and its version now (null when it is gone). */
export interface RevertConflict {
  path: string;
  why: string;
  current: { version: number; etag: string } | null;
}

export interface RevertResult {
  /** The revert's commit; null when nothing needed undoing (or every item was a conflict). */
  commitId: string | null;
  /** Where each reverted item is after the revert. */
  reverted: string[];
  conflicts: RevertConflict[];
}

/** Items one revert may change: a bound on the reads before it and on the one commit it makes. */
export const MAX_REVERT_ITEMS = 10_000;

/** Items whose history is read at once before the write (git reads overlap; memory stays small). */
const READS_AT_ONCE = 16;

/** One item a revert would take back, with what it needs to know from history (read before the write queue). */
interface ItemUndo {
  id: string;
  /** The item before the first reverted change (null: it did not exist). */
  before: TargetState | null;
  /** Where the last reverted change left it and its record then: a later change shows as a difference. */
  afterPath: string;
  afterRecord: string | null;
  afterBlob: string | null;
  /** A commit after the first reverted change that is not reverted (someone else's), if any. */
  laterOther: HistoryEntry | undefined;
  /** Commit order of the last reverted change: items are taken back newest first. */
  order: number;
}

/**
 * `POST /revert`: one new commit that undoes one commit, or every change one key made since a time.
 * An item is taken back only when it is exactly as the reverted change left it and nobody else
 * changed it after: otherwise it is reported in `conflicts` and left alone, unless `force` (then it
 * is taken back from whatever it is now). Undo means content, permissions, path and trash state as
 * they were before; an item the change created goes to the trash. It goes through the write queue
 * as one commit of several items, as `POST /commits` does.
 */
export async function revertChanges(args: {
  repo: OrgRepo;
  actor: Actor;
  keys: KeyStore;
  target: RevertTarget;
  force?: boolean;
  clock?: Clock;
}): Promise<RevertResult> {
  const { repo, actor, target, clock = systemClock } = args;
  requireRole(actor, 'knowledge:admin');
  // A commit, or a key's run of commits, spans folders; undoing only the part inside the scopes would
  // leave a half revert, and reporting the rest as conflicts would name items the key may not see.
  requireUnscoped(actor, 'revert changes (a change may span folders)');
  const conflicts: RevertConflict[] = [];
  const { commits, summary } =
    'commitId' in target ? oneCommit(repo, target.commitId) : await keyCommits({ repo, keys: args.keys, actor, ...target, now: clock() });
  const order = new Map(commits.map((c, i) => [c.commitId, i]));
  const touched = [...byItem(commits)].filter(([, changes]) => {
    if (!changes.some((c) => c.change.action === 'purge')) return true;
    const last = changes[changes.length - 1] as { change: ItemChange };
    conflicts.push({ path: last.change.path, why: 'purged by the reverted change: its history ended there', current: null });
    return false;
  });
  if (touched.length > MAX_REVERT_ITEMS) {
    throw new InvalidInput({ reason: `the revert would change ${touched.length} items, more than ${MAX_REVERT_ITEMS}: revert a shorter time` });
  }
  // History does not change: read before queueing, a few items at a time, so the queue is never held by git reads.
  const undos = await mapLimit(touched, READS_AT_ONCE, async ([id, changes]): Promise<ItemUndo> => {
    const first = changes[0] as { entry: HistoryEntry; change: ItemChange };
    const last = changes[changes.length - 1] as { entry: HistoryEntry; change: ItemChange };
    const later = repo.history.itemHistory(id);
    const from = later.findIndex((h) => h.commitId === first.entry.commitId);
    const [after, before] = await Promise.all([repo.readAt(last.entry.commitId, last.change.path), stateBefore(repo, id, first.entry, first.change)]);
    return {
      id,
      before,
      afterPath: last.change.path,
      afterRecord: after ? serializeRecord(after.record) : null,
      afterBlob: after?.blobOid ?? null,
      laterOther: later.slice(from + 1).find((h) => !order.has(h.commitId)),
      order: order.get(last.entry.commitId) as number,
    };
  });
  undos.sort((a, b) => b.order - a.order);

  const reverted: string[] = [];
  const result = await repo.write((v) => {
    const s = v.scratch();
    const when = clock();
    const intents: ItemIntent[] = [];
    for (const undo of undos) {
      const current = currentEntry(repo, v, undo);
      // Already as it was (undone before, by hand or by an earlier revert): nothing to do, nothing to report.
      if (current && isBack(current, undo.before)) continue;
      const why = conflictOf(undo, current);
      if (current === null || (why !== null && !args.force)) {
        conflicts.push({ path: current?.record.path ?? undo.afterPath, why: why ?? 'no longer in the store', current: current && currentVersion(repo, current) });
        continue;
      }
      try {
        // Planned on a layer of its own: an item refused halfway leaves nothing behind for the next one.
        const steps = planUndo({ s: s.scratch(), actor, current, target: undo.before, summary: summary.split('\n')[0] as string, when });
        steps.forEach((step) => s.apply(step));
        intents.push(...steps);
        // Where its last step left the item: its path after the revert.
        const final = steps[steps.length - 1];
        if (final) reverted.push(final.path);
      } catch (err) {
        if (!isKnowledgeError(err)) throw err;
        conflicts.push({ path: current.record.path, why: err.message, current: currentVersion(repo, current) });
      }
    }
    if (intents.length === 0) return null;
    return { mutation: 'commit', items: intents, summary, author: authorOf(actor), when };
  });
  return { commitId: result.commitId, reverted, conflicts };
}

/** A single commit of main that changed items, none of them purged. */
function oneCommit(repo: OrgRepo, commitId: string): { commits: HistoryEntry[]; summary: string } {
  const entry = isObjectId(commitId) ? repo.history.get(commitId) : undefined;
  if (!entry) throw new InvalidInput({ reason: 'commitId must be the full id of a commit on main of this organization' });
  const changes = itemChanges(entry);
  if (changes.length === 0) throw new InvalidInput({ reason: `commit ${commitId} changed no item (a folder rule or the organization's creation): nothing to revert` });
  const purged = changes.find((c) => c.action === 'purge');
  if (purged) throw new InvalidInput({ reason: `commit ${commitId} purged ${purged.path}: a purge cannot be reverted (the item's history ended there)` });
  const title = entry.message.split('\n')[0] ?? '';
  return { commits: [entry], summary: `Revert "${title}"\n\nThis reverts commit ${commitId}.` };
}

/** How many commits a key revert's message lists by id (the rest are counted). */
const LISTED_COMMITS = 20;

/** Every commit of main the key authored from `since` on (to the second: git keeps whole seconds). */
async function keyCommits(args: { repo: OrgRepo; keys: KeyStore; actor: Actor; keyId: string; since: string; now: Date }): Promise<{ commits: HistoryEntry[]; summary: string }> {
  const { repo, keyId, now } = args;
  const since = parseSince(args.since, now);
  // Revoked keys count: undoing what a key did is most wanted once it has been revoked.
  const key = await args.keys.get(keyId);
  if (!key || key.orgId !== args.actor.orgId) throw new KeyNotFound({ keyId });
  const from = Math.floor(since.getTime() / 1000);
  const commits = repo.history.all().filter((h) => h.author.email === keyId && h.timestamp >= from && itemChanges(h).length > 0);
  const ids = commits.slice(-LISTED_COMMITS).map((c) => c.commitId);
  const more = commits.length - ids.length;
  const list = `${ids.join('\n')}${more > 0 ? `\nand ${more} earlier commits` : ''}`;
  const summary = `Revert changes of ${key.name} (${keyId}) since ${since.toISOString()}\n\nThis reverts commits:\n${list}`;
  return { commits, summary };
}

function parseSince(value: string, now: Date): Date {
  // A date alone, or a date and time: ISO 8601, as the API answers times.
  const since = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(value) ? new Date(value) : null;
  if (!since || Number.isNaN(since.getTime())) throw new InvalidInput({ reason: 'since must be an ISO 8601 date or time, e.g. 2026-11-23T20:00:00Z' });
  if (since.getTime() > now.getTime()) throw new InvalidInput({ reason: 'since is in the future: nothing was changed after it' });
  return since;
}

/** Each item the commits changed, with its changes in commit order. */
function byItem(commits: readonly HistoryEntry[]): Map<string, Array<{ entry: HistoryEntry; change: ItemChange }>> {
  const out = new Map<string, Array<{ entry: HistoryEntry; change: ItemChange }>>();
  for (const entry of commits) {
    for (const change of itemChanges(entry)) {
      let list = out.get(change.id);
      if (!list) out.set(change.id, (list = []));
      list.push({ entry, change });
    }
  }
  return out;
}

/** The item as it was just before `entry` (null when it did not exist yet: the change created it). */
async function stateBefore(repo: OrgRepo, id: string, entry: HistoryEntry, change: ItemChange): Promise<TargetState | null> {
  if (change.action === 'create' || entry.parent === null) return null;
  const then = await repo.readAt(entry.parent, change.from ?? change.path);
  if (!then || then.record.id !== id) return null;
  return { record: then.record, blobOid: then.blobOid, content: await repo.readContent(then) };
}

/** The item now, found where history says it is (or where the reverted change left it), in the queue's view. */
function currentEntry(repo: OrgRepo, v: RepoView, undo: ItemUndo): IndexEntry | null {
  const log = repo.history.itemHistory(undo.id);
  const latest = log[log.length - 1];
  for (const path of [latest?.item?.path, undo.afterPath]) {
    const entry = path === undefined ? undefined : v.get(path);
    if (entry && entry.record.id === undo.id) return entry;
  }
  return null;
}

/** Why the item is not as the reverted change left it (null: it is, and nobody else touched it since). */
function conflictOf(undo: ItemUndo, current: IndexEntry | null): string | null {
  const other = undo.laterOther;
  if (other?.item?.action === 'purge') return 'purged after the reverted change';
  if (current === null) return 'no longer in the store';
  if (other) return `changed after the reverted change by ${other.author.name} (${other.author.email}) in commit ${other.commitId}`;
  if (current.blobOid !== undo.afterBlob || serializeRecord(current.record) !== undo.afterRecord) return 'changed after the reverted change';
  return null;
}

/** True when the item is as `before` had it: in the trash when it did not exist then, else the same path, content, permissions and trash state. */
function isBack(current: IndexEntry, before: TargetState | null): boolean {
  const now = current.record;
  if (before === null) return now.deletedAt !== null;
  const then = before.record;
  return (
    current.blobOid === before.blobOid &&
    now.fileKey === then.fileKey &&
    now.path === then.path &&
    now.requiredReadPermission === then.requiredReadPermission &&
    now.requiredWritePermission === then.requiredWritePermission &&
    (now.deletedAt === null) === (then.deletedAt === null)
  );
}

function currentVersion(repo: OrgRepo, entry: IndexEntry): { version: number; etag: string } {
  const versions = repo.history.itemHistory(entry.record.id).filter((h) => h.item?.action !== 'purge').length;
  return { version: versions, etag: versionTag(entry) };
}
