import type { HistoryEntry, ItemChange } from '../storage/repo/historyLog.js';
import type { FolderRule, ItemRecord } from '../storage/repo/itemRecord.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { canSee, type RuleSource } from './access.js';
import type { ChangeView } from './changes.js';
import type { Actor } from './keys.js';
import { ancestorFolders } from './paths.js';

/** An item's record on one side of a commit (undefined: none at that path then), and the folder rules of that side. */
interface Side {
  record: ItemRecord | undefined;
  rules: RuleSource;
}

interface ItemFacts {
  change: ItemChange;
  /** Before: at the path the item left (moves) or its own path, in the parent commit. */
  before: Side;
  after: Side;
}

/** An item no trailer names whose visibility a folder rule of the commit may have changed. */
interface RuledItem {
  record: ItemRecord;
  before: RuleSource;
  after: RuleSource;
}

/**
 * What one commit changed, read once from git for every listener (an event stream, a webhook): per item,
 * its record and folder rules just before and just after the commit. Who may see what is decided per key
 * by `visibleChanges`, synchronously, so 200 listeners cost 200 cheap checks, not 200 git reads.
 */
export interface CommitChanges {
  commitId: string;
  timestamp: string;
  items: ItemFacts[];
  ruled: RuledItem[];
}

/**
 * Reads the facts of one commit of main. The rules of each side are read from that side's tree, so a
 * listener catching up on old commits gets what the change feed would have said then; only the items a
 * folder rule revealed or hid are today's (as in the change feed, which looks at today's items there).
 */
export async function loadCommitChanges(repo: OrgRepo, entry: HistoryEntry): Promise<CommitChanges> {
  const timestamp = new Date(entry.timestamp * 1000).toISOString();
  const base = { commitId: entry.commitId, timestamp, items: [] as ItemFacts[], ruled: [] as RuledItem[] };
  // The organization's first commit holds no item.
  if (entry.parent === null) return base;
  const parent = entry.parent;
  const rulesBefore = ruleReader(repo, parent);
  const rulesAfter = ruleReader(repo, entry.commitId);
  const changes = entry.items ?? (entry.item ? [entry.item] : []);
  for (const change of changes) {
    const from = change.from ?? change.path;
    const [was, is] = await Promise.all([repo.readAt(parent, from), repo.readAt(entry.commitId, change.path)]);
    base.items.push({
      change,
      before: { record: was?.record, rules: await rulesBefore(from) },
      after: { record: is?.record, rules: await rulesAfter(change.path) },
    });
  }
  if (changes.length === 0) {
    // A folder rule commit: the items under it that no commit touched may appear or vanish for a role.
    const seen = new Set<string>();
    for (const folder of await repo.foldersChangedBy(entry.commitId, parent)) {
      for (const item of repo.entries({ prefix: `${folder}/` })) {
        if (item.record.deletedAt !== null || seen.has(item.record.id)) continue;
        seen.add(item.record.id);
        base.ruled.push({ record: item.record, before: await rulesBefore(item.record.path), after: await rulesAfter(item.record.path) });
      }
    }
  }
  return base;
}

/** The commit's entries as the change feed would give them to `actor` (items it may not read are left out). */
export function visibleChanges(facts: CommitChanges, actor: Actor): ChangeView[] {
  const out: ChangeView[] = [];
  const add = (id: string, path: string, change: ChangeView['change']): void => {
    out.push({ id, path, change, commitId: facts.commitId, timestamp: facts.timestamp });
  };
  for (const { change, before, after } of facts.items) {
    const seenBefore = liveAndSeen(actor, change.id, before);
    const seenAfter = liveAndSeen(actor, change.id, after);
    const from = change.from ?? change.path;
    if (from !== change.path) {
      // A move: "deleted" where the item was, "created" where it is (the change feed's two entries, one id).
      if (seenBefore) add(change.id, from, 'deleted');
      if (seenAfter) add(change.id, change.path, 'created');
    } else if (seenAfter) add(change.id, change.path, seenBefore ? 'updated' : 'created');
    else if (seenBefore || (change.action === 'purge' && seenAnyState(actor, change.id, before))) add(change.id, change.path, 'deleted');
  }
  for (const { record, before, after } of facts.ruled) {
    const was = canSee(actor, record, before);
    const is = canSee(actor, record, after);
    if (was !== is) add(record.id, record.path, is ? 'created' : 'deleted');
  }
  return out;
}

function liveAndSeen(actor: Actor, id: string, side: Side): boolean {
  return side.record !== undefined && side.record.deletedAt === null && seenAnyState(actor, id, side);
}

/** A purged item was in the trash: the change feed still reports it to a role that could see its trash entry. */
function seenAnyState(actor: Actor, id: string, side: Side): boolean {
  return side.record !== undefined && side.record.id === id && canSee(actor, side.record, side.rules);
}

/** The folder rules above a path as they were in `commitId` (each folder read once per commit). */
function ruleReader(repo: OrgRepo, commitId: string): (path: string) => Promise<RuleSource> {
  const rules = new Map<string, FolderRule | undefined>();
  return async (path) => {
    for (const folder of ancestorFolders(path)) {
      if (!rules.has(folder)) rules.set(folder, await repo.folderRuleAt(commitId, folder));
    }
    return { folderRule: (folder) => rules.get(folder) };
  };
}
