import { perItem } from '../storage/repo/historyLog.js';
import type { FolderRule, ItemRecord } from '../storage/repo/itemRecord.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { canSee, requireRole, seesEverything, type RuleSource } from './access.js';
import { requireOwnCommit } from './history.js';
import type { Actor } from './keys.js';
import { ancestorFolders } from './paths.js';

/** One item's net change since the given commit. */
export interface ChangeView {
  id: string;
  path: string;
  change: 'created' | 'updated' | 'deleted';
  /** The last commit that changed the item (or, for an item a folder rule revealed or hid, that rule's commit). */
  commitId: string;
  timestamp: string;
}

type Entry = NonNullable<ReturnType<OrgRepo['history']['after']>>[number];

/**
 * `GET /changes?since=<commit>`: what an agent must apply to a copy
 * made at `since` to match `head`, as the role sees both. One entry per item, in
 * the order of their last change; items the role may not see are left out.
 *
 * What the role sees can change without a commit to the item: its own permissions
 * may be raised, or a folder rule above it set. The copy made at `since` holds the
 * items the role could read then (their records and the folder rules as they were
 * at `since`); an item it could read then and cannot now is "deleted" for it, and one
 * it can read now and could not then is "created". A purged item's record is gone
 * from the tree, so the role is checked against the record it had just before the purge.
 * A moved item is two entries with its one id: "deleted" at the path the copy holds it at
 * (with the move's commit), then "created" at its new path (if the role reads it there).
 */
export async function changesSince(args: {
  repo: OrgRepo;
  actor: Actor;
  since?: string;
}): Promise<{ head: string | null; changes: ChangeView[] }> {
  const { repo, actor, since } = args;
  requireRole(actor, 'knowledge:read');
  // No `since` is a first call: nothing to apply yet, and the head to ask from next time.
  if (since === undefined) return { head: repo.headCommit, changes: [] };
  // A commit of several items (POST /commits) counts once per item it changed.
  const after = perItem(repo.history.after(requireOwnCommit(repo, since, 'since')) ?? []);
  const ruleChanges = await folderRuleChanges(repo, after);
  const rulesThen = await rulesAt(repo, since, ruleChanges);
  // An admin without scopes reads everything: what it could read at `since` needs no look at the old records.
  const seesAll = seesEverything(actor);

  /** Per item: its first and last commit after `since`, and the last move that took it away from where it was then. */
  const byItem = new Map<string, { first: Entry; last: Entry; position: number; left?: { entry: Entry; position: number } }>();
  after.forEach((entry, position) => {
    if (!entry.item) return;
    const seen = byItem.get(entry.item.id);
    const first = seen?.first ?? entry;
    const left = entry.item.from !== undefined && entry.item.from === pathBefore(first) ? { entry, position } : seen?.left;
    byItem.set(entry.item.id, { first, last: entry, position, ...(left ? { left } : {}) });
  });

  const found: Array<ChangeView & { position: number }> = [];
  const add = (id: string, path: string, change: ChangeView['change'], entry: Entry, position: number): void => {
    found.push({ id, path, change, commitId: entry.commitId, timestamp: new Date(entry.timestamp * 1000).toISOString(), position });
  };

  for (const [id, { first, last, position, left }] of byItem) {
    const path = last.item?.path as string;
    const now = repo.get(path);
    const live = now?.record.id === id && now.record.deletedAt === null ? now.record : undefined;
    // Created, or restored from the trash, after `since`: a copy made then lacks it.
    const action = first.item?.action;
    const existedThen = action !== 'create' && action !== 'restore' && action !== 'purge';
    const pathThen = pathBefore(first);
    const readableThen = existedThen && (seesAll || (await readableAt(repo, actor, since, pathThen, id, rulesThen)));
    // Moved since: a copy holds it at its old path, which it has left ("deleted" there, by the move),
    // and lacks its new one ("created" there, if the role sees it now). The id stays the same.
    const moved = pathThen !== path;
    if (moved && readableThen && left) add(id, pathThen, 'deleted', left.entry, left.position);
    if (live && canSee(actor, live, repo)) {
      add(id, path, readableThen && !moved ? 'updated' : 'created', last, position);
      continue;
    }
    if (moved && readableThen) continue;
    // Deleted, purged or hidden now: "deleted" for a role whose copy may hold it.
    const record = live ?? (now?.record.id === id ? now.record : last.parent ? (await repo.readAt(last.parent, path))?.record : undefined);
    if (readableThen || (record && record.id === id && canSee(actor, record, repo))) add(id, path, 'deleted', last, position);
  }

  // Items no commit touched, revealed or hidden by a folder rule set after `since`.
  for (const [folder, { entry, position }] of ruleChanges) {
    for (const item of repo.entries({ prefix: `${folder}/` })) {
      const record = item.record;
      if (byItem.has(record.id) || record.deletedAt !== null) continue;
      // The nearest changed rule above the item is the one reported (each item once).
      const nearest = ancestorFolders(record.path).filter((f) => ruleChanges.has(f)).at(-1);
      if (nearest !== folder) continue;
      const before = canSee(actor, record, rulesThen);
      const nowSeen = canSee(actor, record, repo);
      if (before !== nowSeen) add(record.id, record.path, nowSeen ? 'created' : 'deleted', entry, position);
    }
  }

  found.sort((a, b) => a.position - b.position);
  return { head: repo.headCommit, changes: found.map(({ position: _position, ...change }) => change) };
}

/** Where the item of an item commit was just before it: the path a move left, else the path itself. */
function pathBefore(entry: Entry): string {
  return entry.item?.from ?? (entry.item?.path as string);
}

/** Folders whose rule changed after `since`, each with the last commit that changed it. */
async function folderRuleChanges(repo: OrgRepo, after: readonly Entry[]): Promise<Map<string, { entry: Entry; position: number }>> {
  const changed = new Map<string, { entry: Entry; position: number }>();
  for (const [position, entry] of after.entries()) {
    // Folder rules are committed alone, without the trailers of an item commit; a commit after
    // `since` always has a parent.
    if (entry.item || entry.parent === null) continue;
    for (const folder of await repo.foldersChangedBy(entry.commitId, entry.parent)) changed.set(folder, { entry, position });
  }
  return changed;
}

/** The folder rules as they were at `since`: those changed since are read from its tree, the rest are today's. */
async function rulesAt(repo: OrgRepo, since: string, changed: ReadonlyMap<string, unknown>): Promise<RuleSource> {
  const then = new Map<string, FolderRule | undefined>();
  for (const folder of changed.keys()) then.set(folder, await repo.folderRuleAt(since, folder));
  return { folderRule: (folder) => (then.has(folder) ? then.get(folder) : repo.folderRule(folder)) };
}

/** The role could read item `id` at `since`: it was live at `path` then, and its record and the rules of then allowed it. */
async function readableAt(repo: OrgRepo, actor: Actor, since: string, path: string, id: string, rules: RuleSource): Promise<boolean> {
  const then: ItemRecord | undefined = (await repo.readAt(since, path))?.record;
  return then !== undefined && then.id === id && then.deletedAt === null && canSee(actor, then, rules);
}
