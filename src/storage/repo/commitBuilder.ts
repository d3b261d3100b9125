import { formatCommitMessage, formatFolderCommitMessage, type ItemAction, type ItemTrailers } from './commitMessage.js';
import { historyEntry, type HistoryEntry } from './historyLog.js';
import { blobObject } from '../git/objectFormat.js';
import { IndexOverlay, type IndexEntry, type IndexView } from './itemIndex.js';
import { contentFiles, LAYOUT, serializeFolderRule, serializeRecord, type FolderRule, type ItemRecord } from './itemRecord.js';
import type { ObjectStager } from '../git/objectStager.js';
import type { TreeChange, TreeEditor } from '../git/treeEditor.js';

/**
 * What a transaction asks for: one state change of one item, which becomes
 * exactly one commit. `put` writes content and record; `trash` moves the
 * content under `.trash/`; `restore` moves it back; `purge` removes both;
 * `move` takes content and record from `from` to `path` (the content blob
 * unchanged, so git's rename detection sees a rename).
 */
export interface ItemIntent {
  mutation: 'put' | 'trash' | 'restore' | 'purge' | 'move';
  /** Where the item is after the commit. */
  path: string;
  record: ItemRecord;
  /**
   * New content, for `put` (a file item's extracted text; its original bytes are the blob the
   * record's `fileKey` names, stored before the commit: see `OrgRepo.storeFile`).
   */
  content?: string;
  /** Where a live item is before a `move`. */
  from?: string;
  action: ItemAction;
  /** The commit message before the trailers. */
  summary: string;
  author: { name: string; email: string };
  when: Date;
}

/** Sets (or, with null, removes) the rule of a folder. */
export interface FolderRuleIntent {
  mutation: 'folderRule';
  folder: string;
  rule: FolderRule | null;
  summary: string;
  author: { name: string; email: string };
  when: Date;
}

/**
 * Several item changes as one commit (`POST /commits`): applied in order, each on the state the
 * ones before it left; the commit names every item it changed (see `commitTrailers`).
 */
export interface CommitIntent {
  mutation: 'commit';
  items: readonly ItemIntent[];
  summary: string;
  author: { name: string; email: string };
  when: Date;
}

export type WriteIntent = ItemIntent | FolderRuleIntent | CommitIntent;

/** What an item intent leaves in the index: the entry at its path (null for a purge), and the path a move frees. */
export function entryAfter(intent: ItemIntent, view: IndexView): IndexEntry | null {
  if (intent.mutation === 'purge') return null;
  const source = intent.mutation === 'move' ? (intent.from === undefined ? undefined : view.get(intent.from)) : view.get(intent.path);
  const blobOid = intent.mutation === 'put' ? blobObject(Buffer.from(intent.content ?? '', 'utf8')).oid : source?.blobOid;
  if (blobOid === undefined) throw new Error(`no entry to ${intent.mutation} at ${intent.from ?? intent.path}`);
  return { record: intent.record, blobOid, recordOid: blobObject(Buffer.from(serializeRecord(intent.record), 'utf8')).oid };
}

/** Makes an item intent's effect visible in `overlay`: a move frees the path it left, in the same step as it takes the new one. */
export function applyToOverlay(overlay: IndexOverlay, intent: ItemIntent, entry: IndexEntry | null): void {
  if (intent.mutation === 'move' && intent.from !== undefined) overlay.set(intent.from, null);
  overlay.set(intent.path, entry);
}

/**
 * The commit builder: turns one write intent into the blobs, the rewritten
 * trees (only those on the changed paths) and the commit object, all staged
 * in memory until the batch is flushed. One intent, one commit; content and
 * record change together, and every object must pass `git fsck --strict`.
 */
export async function buildCommit(args: {
  intent: WriteIntent;
  trees: TreeEditor;
  overlay: IndexOverlay;
  head: string | null;
  root: string | null;
  stager: ObjectStager;
  written: Map<string, string>;
}): Promise<{ commitId: string; root: string; entry: IndexEntry | null; entries: Array<IndexEntry | null>; history: HistoryEntry }> {
  const { intent, stager } = args;
  const { changes, entries, message } =
    intent.mutation === 'folderRule'
      ? { ...folderChanges(intent, stager), entries: [] }
      : intent.mutation === 'commit'
        ? severalItemChanges(intent, args)
        : (({ changes, entry, message }) => ({ changes, entries: [entry], message }))(itemChanges(intent, args));
  const { commitId, root, author } = await stageCommit({ ...args, changes, author: intent.author, when: intent.when, message });
  const entry = intent.mutation === 'commit' ? null : (entries[0] ?? null);
  return { commitId, root, entry, entries, history: historyEntry(commitId, { parent: args.head, message, author }) };
}

/**
 * The tree changes of several item intents, each decided on the state the ones before it left (read
 * through a layer over `overlay`, which itself is left as it was): a later change of a path replaces
 * an earlier one, and removing what the base tree never had is no change.
 */
function severalItemChanges(
  intent: CommitIntent,
  args: { overlay: IndexOverlay; stager: ObjectStager; written: Map<string, string> },
): { changes: TreeChange[]; entries: Array<IndexEntry | null>; message: string } {
  const layer = new IndexOverlay(args.overlay);
  const byPath = new Map<string, TreeChange>();
  const entries: Array<IndexEntry | null> = [];
  for (const item of intent.items) {
    const { changes, entry } = itemChanges(item, { ...args, overlay: layer });
    for (const change of changes) {
      byPath.delete(change.path);
      byPath.set(change.path, change);
    }
    applyToOverlay(layer, item, entry);
    entries.push(entry);
  }
  return { changes: [...byPath.values()], entries, message: formatCommitMessage(intent.summary, commitTrailers(intent.items)) };
}

/**
 * One trailer group per item, in the order each was first changed. An item changed by several
 * intents (a put, then a move of it) is one group: created if its first change created it, else
 * moved (from where it was before the commit) if any change moved it, else its last action.
 */
function commitTrailers(items: readonly ItemIntent[]): ItemTrailers[] {
  const byId = new Map<string, ItemTrailers>();
  for (const item of items) {
    const seen = byId.get(item.record.id);
    const fromPath = item.mutation === 'move' ? item.from : undefined;
    if (!seen) {
      byId.set(item.record.id, { itemId: item.record.id, itemPath: item.path, action: item.action, ...(fromPath ? { fromPath } : {}) });
      continue;
    }
    seen.itemPath = item.path;
    if (seen.action === 'create') continue;
    if (item.mutation === 'move' && seen.action !== 'move') {
      seen.action = 'move';
      seen.fromPath = seen.fromPath ?? (item.from as string);
    } else if (seen.action !== 'move') seen.action = item.action;
  }
  return [...byId.values()];
}

/**
 * Stages one commit: the trees on the changed paths rewritten from `root`,
 * then the commit on `head` (none for the first commit). Git wants whole
 * seconds for the time.
 */
export async function stageCommit(args: {
  trees: TreeEditor;
  stager: ObjectStager;
  root: string | null;
  head: string | null;
  changes: TreeChange[];
  author: { name: string; email: string };
  when: Date;
  message: string;
}): Promise<{ commitId: string; root: string; author: { name: string; email: string; timestamp: number } }> {
  const root = await args.trees.apply(args.root, args.changes, args.stager);
  const author = { ...args.author, timestamp: Math.floor(args.when.getTime() / 1000) };
  const commitId = args.stager.writeCommit({ tree: root, parents: args.head ? [args.head] : [], author, message: args.message });
  return { commitId, root, author };
}

function itemChanges(
  intent: ItemIntent,
  args: { overlay: IndexView; stager: ObjectStager; written: Map<string, string> },
): { changes: TreeChange[]; entry: IndexEntry | null; message: string } {
  const { path, record } = intent;
  const { stager } = args;
  // Where the item's content is before the commit (at `from` for a move) and its content blob.
  const before = intent.mutation === 'move' ? (intent.from === undefined ? undefined : args.overlay.get(intent.from)) : args.overlay.get(path);
  if (intent.mutation === 'move' && (!before || intent.from === path)) throw new Error(`no other entry at ${String(intent.from)} to move to ${path}`);
  let blobOid: string;
  if (intent.mutation === 'put') {
    const content = intent.content ?? '';
    blobOid = stager.writeBlob(Buffer.from(content, 'utf8'));
    args.written.set(blobOid, content);
  } else {
    if (!before) throw new Error(`no entry at ${path} to ${intent.mutation}`);
    blobOid = before.blobOid;
  }
  // Every file that held the item's content goes, then every file that holds it now comes (the
  // same path in both is simply replaced): text items have one such file, file items two.
  const placed = new Map<string, string | null>();
  if (before) for (const file of contentFiles(before.record, before.blobOid)) placed.set(file.path, null);
  if (intent.mutation === 'move' && intent.from !== undefined) placed.set(LAYOUT.recordPath(intent.from), null);
  let entry: IndexEntry | null = null;
  if (intent.mutation === 'purge') {
    placed.set(LAYOUT.recordPath(path), null);
  } else {
    for (const file of contentFiles(record, blobOid)) placed.set(file.path, file.oid);
    const recordOid = stager.writeBlob(Buffer.from(serializeRecord(record), 'utf8'));
    placed.set(LAYOUT.recordPath(path), recordOid);
    entry = { record, blobOid, recordOid };
  }
  const changes: TreeChange[] = [...placed].map(([file, oid]) => ({ path: file, oid }));
  const fromPath = intent.mutation === 'move' ? intent.from : undefined;
  const message = formatCommitMessage(intent.summary, { itemId: record.id, itemPath: path, action: intent.action, ...(fromPath ? { fromPath } : {}) });
  return { changes, entry, message };
}

function folderChanges(
  intent: FolderRuleIntent,
  stager: ObjectStager,
): { changes: TreeChange[]; entry: null; message: string } {
  const oid = intent.rule ? stager.writeBlob(Buffer.from(serializeFolderRule(intent.rule), 'utf8')) : null;
  const changes = [{ path: LAYOUT.folderRulePath(intent.folder), oid }];
  return { changes, entry: null, message: formatFolderCommitMessage(intent.summary, intent.folder) };
}
