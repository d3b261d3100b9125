import { itemChanges, type HistoryEntry, type ItemChange } from '../storage/repo/historyLog.js';
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

/** Records already read, by `<org>:<commit>:<path>`: the after-side records of the commits whose facts were read (null: none there). */
export type KnownRecords = Map<string, ItemRecord | null>;

/** How far behind the head a commit may be for its rules to be taken from today's index (see `rulesAreToday`). */
const RECENT = 1000;

/**
 * Reads the facts of one commit of main: the records and folder rules of each side as they were then, so a
 * listener catching up on old commits after a restart gets what the change feed said while each was the head.
 *
 * Reading records from git costs a pack lookup each; for the commits a live stream follows, they are mostly
 * in memory already: the head's records are today's index, and a record before a commit is the one after
 * the item's previous commit, kept in `known` when that commit was read.
 */
export async function loadCommitChanges(repo: OrgRepo, entry: HistoryEntry, known?: KnownRecords): Promise<CommitChanges> {
  const timestamp = new Date(entry.timestamp * 1000).toISOString();
  const base = { commitId: entry.commitId, timestamp, items: [] as ItemFacts[], ruled: [] as RuledItem[] };
  // The organization's first commit holds no item.
  if (entry.parent === null) return base;
  const parent = entry.parent;
  const changes = itemChanges(entry);
  // Today's rules are copied now, before anything is awaited: read after the records' reads below, they could be
  // those of a folder rule published meanwhile (an item moved into a folder vanished from its move's event for a
  // role the next commit's rule then shut out of the folder).
  const today = rulesAreToday(repo, entry) ? rulesNow(repo, changes.flatMap((c) => [c.from ?? c.path, c.path])) : undefined;
  const rulesBefore = today ? async () => today : ruleReader(repo, parent);
  const rulesAfter = today ? async () => today : ruleReader(repo, entry.commitId);
  for (const change of changes) {
    const from = change.from ?? change.path;
    // null is known too (no item there): only undefined sends the read to git.
    const before = await orRead(knownBefore(repo, entry, change, known), () => repo.readAt(parent, from));
    const afterKey = `${repo.orgId}:${entry.commitId}:${change.path}`;
    const after = await orRead(known?.has(afterKey) ? (known.get(afterKey) ?? null) : todaysAfter(repo, entry, change), () => repo.readAt(entry.commitId, change.path));
    known?.set(afterKey, after);
    base.items.push({
      change,
      before: { record: before ?? undefined, rules: await rulesBefore(from) },
      after: { record: after ?? undefined, rules: await rulesAfter(change.path) },
    });
  }
  if (changes.length === 0) {
    // A folder rule commit: the items under it that no commit touched may appear or vanish for a role.
    const seen = new Set<string>();
    const before = ruleReader(repo, parent);
    const after = ruleReader(repo, entry.commitId);
    for (const folder of await repo.foldersChangedBy(entry.commitId, parent)) {
      // The items under the folder then: today's index while the commit is the head, else its tree's records.
      const records = repo.headCommit === entry.commitId ? [...repo.entries({ prefix: `${folder}/` })].map((e) => e.record) : await repo.recordsUnder(entry.commitId, folder);
      for (const record of records) {
        if (record.deletedAt !== null || seen.has(record.id)) continue;
        seen.add(record.id);
        base.ruled.push({ record, before: await before(record.path), after: await after(record.path) });
      }
    }
  }
  return base;
}

/** The record as known (null: none there), or, when unknown (undefined), as git has it. */
async function orRead(known: ItemRecord | null | undefined, read: () => Promise<{ record: ItemRecord } | null>): Promise<ItemRecord | null> {
  return known !== undefined ? known : ((await read())?.record ?? null);
}

/**
 * Folder rules change only in commits of their own: when none came after this item commit (and the history
 * has caught up with the index's head), the rules on both sides of it are today's.
 */
function rulesAreToday(repo: OrgRepo, entry: HistoryEntry): boolean {
  if (!entry.item) return false;
  const later = repo.history.after(entry.commitId);
  if (!later || later.length > RECENT) return false;
  return (later.at(-1)?.commitId ?? entry.commitId) === repo.headCommit && later.every((e) => e.item !== undefined);
}

/** The item's record just after the commit, from today's index when the commit is the head and the item's last change. */
function todaysAfter(repo: OrgRepo, entry: HistoryEntry, change: ItemChange): ItemRecord | null | undefined {
  return repo.headCommit === entry.commitId ? lastAfter(repo, entry, change) : undefined;
}

/**
 * Notes the records just after each commit of a batch as it is published, while they are today's index:
 * listeners are woken up to a wake-up gap later (50 ms to 1 s, see `wakeGapMs` in events.ts), when the head has moved on and
 * `todaysAfter` no longer applies; without this each commit's records were read back from git (~1 ms of
 * the event loop per commit, with a single listener). A few map look-ups per item: done only for an
 * organization that has listeners.
 */
export function rememberPublished(repo: OrgRepo, commits: readonly HistoryEntry[], known: KnownRecords): void {
  for (const entry of commits) {
    for (const change of itemChanges(entry)) {
      const after = lastAfter(repo, entry, change);
      if (after !== undefined) known.set(`${repo.orgId}:${entry.commitId}:${change.path}`, after);
    }
  }
}

/**
 * The item's record just after the commit, from today's index, when that commit is the item's last change
 * and the index is the history's head (so nothing since moved, changed or purged the item).
 */
function lastAfter(repo: OrgRepo, entry: HistoryEntry, change: ItemChange): ItemRecord | null | undefined {
  if (repo.headCommit !== repo.history.head || repo.history.itemHistory(change.id).at(-1)?.commitId !== entry.commitId) return undefined;
  const now = repo.get(change.path);
  if (now?.record.id === change.id) return now.record;
  return now === undefined && change.action === 'purge' ? null : undefined;
}

/**
 * Notes the records just before a batch's commits, while the index still holds them (a batch is staged before it
 * is published): for each item the batch changes, its record now is the one after its last commit, which is what
 * `knownBefore` looks up. Without this, the record before an update of an item last changed before the listeners
 * came (or longer ago than `known` keeps) was read back from git, per commit: a tree walk and the record's pack,
 * often a new one to open (test/bench/events.ts: ~0.7 ms of the server's GC threads per PUT with 200 listeners).
 * Only the first commit of the batch that changes an item is noted here (the later ones' before is the after
 * of a commit of the same batch). Nothing is noted unless the index and the history are at the batch's parent.
 */
export function rememberBefore(repo: OrgRepo, parent: string | null, commits: readonly HistoryEntry[], known: KnownRecords): void {
  if (parent === null || repo.headCommit !== parent || repo.history.head !== parent) return;
  const noted = new Set<string>();
  for (const entry of commits) {
    for (const change of itemChanges(entry)) {
      if (noted.has(change.id)) continue;
      noted.add(change.id);
      if (change.action === 'create' && change.from === undefined) continue;
      const previous = repo.history.itemHistory(change.id).at(-1);
      const from = change.from ?? change.path;
      const now = repo.get(from);
      if (previous && now?.record.id === change.id) known.set(`${repo.orgId}:${previous.commitId}:${from}`, now.record);
    }
  }
}

/** The item's record just before the commit: nothing for a creation; else the one after its previous commit, if that was read. */
function knownBefore(repo: OrgRepo, entry: HistoryEntry, change: ItemChange, known: KnownRecords | undefined): ItemRecord | null | undefined {
  // A creation needs the path free (a live or trashed item there would make it an update or a 409).
  if (change.action === 'create' && change.from === undefined) return null;
  if (!known) return undefined;
  const history = repo.history.itemHistory(change.id);
  const at = history.findLastIndex((e) => e.commitId === entry.commitId);
  const previous = at > 0 ? history[at - 1] : undefined;
  return previous ? known.get(`${repo.orgId}:${previous.commitId}:${change.from ?? change.path}`) : undefined;
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

/** Today's folder rules of every folder above `paths`, as they are now (a copy, not the live index). */
function rulesNow(repo: OrgRepo, paths: readonly string[]): RuleSource {
  const rules = new Map<string, FolderRule | undefined>();
  for (const path of paths) for (const folder of ancestorFolders(path)) if (!rules.has(folder)) rules.set(folder, repo.folderRule(folder));
  return { folderRule: (folder) => rules.get(folder) };
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
