import { formatCommitMessage, formatFolderCommitMessage, type ItemAction } from './commitMessage.js';
import { historyEntry, type HistoryEntry } from './historyLog.js';
import type { IndexEntry, IndexOverlay } from './itemIndex.js';
import { LAYOUT, serializeFolderRule, serializeRecord, type FolderRule, type ItemRecord } from './itemRecord.js';
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
  /** New content, for `put`. */
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

export type WriteIntent = ItemIntent | FolderRuleIntent;

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
}): Promise<{ commitId: string; root: string; entry: IndexEntry | null; history: HistoryEntry }> {
  const { intent, stager } = args;
  const { changes, entry, message } =
    intent.mutation === 'folderRule' ? folderChanges(intent, stager) : itemChanges(intent, args);
  const { commitId, root, author } = await stageCommit({ ...args, changes, author: intent.author, when: intent.when, message });
  return { commitId, root, entry, history: historyEntry(commitId, { parent: args.head, message, author }) };
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
  args: { overlay: IndexOverlay; stager: ObjectStager; written: Map<string, string> },
): { changes: TreeChange[]; entry: IndexEntry | null; message: string } {
  const { path, record } = intent;
  const { stager } = args;
  const current = args.overlay.get(path);
  const changes: TreeChange[] = [];
  let blobOid: string;
  if (intent.mutation === 'put') {
    const content = intent.content ?? '';
    blobOid = stager.writeBlob(Buffer.from(content, 'utf8'));
    args.written.set(blobOid, content);
    changes.push({ path, oid: blobOid });
  } else if (intent.mutation === 'move') {
    const from = intent.from === undefined ? undefined : args.overlay.get(intent.from);
    if (!from || intent.from === undefined || intent.from === path) throw new Error(`no other entry at ${String(intent.from)} to move to ${path}`);
    blobOid = from.blobOid;
    changes.push({ path: intent.from, oid: null }, { path: LAYOUT.recordPath(intent.from), oid: null }, { path, oid: blobOid });
  } else {
    if (!current) throw new Error(`no entry at ${path} to ${intent.mutation}`);
    blobOid = current.blobOid;
    changes.push(
      { path, oid: intent.mutation === 'restore' ? blobOid : null },
      { path: LAYOUT.trashPath(path), oid: intent.mutation === 'trash' ? blobOid : null },
    );
  }
  let entry: IndexEntry | null = null;
  if (intent.mutation === 'purge') {
    changes.push({ path: LAYOUT.recordPath(path), oid: null });
  } else {
    const recordOid = stager.writeBlob(Buffer.from(serializeRecord(record), 'utf8'));
    changes.push({ path: LAYOUT.recordPath(path), oid: recordOid });
    entry = { record, blobOid, recordOid };
  }
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
