import { isObjectId } from '../git/objectFormat.js';
import { SharedStrings } from '../../common/sharedStrings.js';
import type { Logger } from '../../common/log.js';
import { unlessMissing, writeFileDurable } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';
import type { IndexEntry } from './itemIndex.js';
import { folderRuleFromValue, recordFromValue, type FolderRule, type ItemRecord } from './itemRecord.js';
import { ITEMS_PER_TURN, nextTurn } from '../../common/turn.js';
import { eachJsonLine, firstLine, linesText } from '../../common/jsonLines.js';

/**
 * The format marker: a snapshot of another format is ignored (and rewritten), never misread. Format 2 is one
 * JSON line of its own (head, tree, folder rules, the number of items), then one line per item, so that it is
 * parsed in slices (`common/jsonLines.ts`); format 1, one JSON object (parsed in one piece, ~100 ms at 50,000
 * items), is still read, and written again as format 2 at the next save.
 */
const FORMAT = 2;
const FORMAT_ONE_OBJECT = 1;

/** The item index as it was at one commit of main. */
export interface IndexSnapshot {
  head: string;
  /** The head commit's root tree: what a later head is compared against to catch up. */
  tree: string;
  items: IndexEntry[];
  rules: FolderRule[];
  /** Written in an earlier format: save it again even if nothing changed. */
  outdated?: boolean;
}

/**
 * The item index saved beside the repository (`knowledge-index.json`, inside
 * the bare repository's directory: git ignores it, a clone does not carry it),
 * so a start reads one file instead of one record blob per item (target:
 * startup under 3 s at 50,000 items).
 *
 * Like the history log it is derived data, keyed by the commit it describes.
 * A snapshot of the current head is taken as is; an older one is brought up
 * to date from a diff of the two root trees (the repository decides); a
 * missing, damaged or foreign one means a full rebuild from git. It is written
 * with temp file -> fsync -> rename, so it is whole or absent.
 */
export class IndexSnapshotFile {
  readonly path: string;

  constructor(
    private readonly fs: FsPromises,
    gitdir: string,
    private readonly logger: Logger,
  ) {
    this.path = `${gitdir}/knowledge-index.json`;
  }

  /** `shared`: strings to share with what else is loaded beside it (the history log names the same items). */
  async read(shared = new SharedStrings()): Promise<IndexSnapshot | null> {
    let bytes: Buffer | null;
    try {
      bytes = await unlessMissing(this.fs.readFile(this.path));
    } catch (err) {
      this.logger.warn('index snapshot unreadable; rebuilding from git', { error: String(err) });
      return null;
    }
    if (bytes === null) return null;
    try {
      return await decode(bytes, this.path, shared);
    } catch (err) {
      this.logger.warn('index snapshot damaged; rebuilding from git', { error: String(err) });
      return null;
    }
  }

  /** Written in slices (a turn of the event loop every 5,000 items), from the items as they are when called. */
  async write(snapshot: IndexSnapshot): Promise<void> {
    const header = JSON.stringify({ knowledgeIndexSnapshot: FORMAT, head: snapshot.head, tree: snapshot.tree, items: snapshot.items.length, rules: snapshot.rules });
    const text = await linesText([...snapshot.items], (e) => JSON.stringify([e.recordOid, e.blobOid, e.record]), header);
    await writeFileDurable(this.fs, this.path, text);
  }
}

/** The snapshot in the file; null when it is of another format, an error when it is damaged. */
async function decode(bytes: Buffer, where: string, shared: SharedStrings): Promise<IndexSnapshot | null> {
  const first = firstLine(bytes);
  const header = JSON.parse(first.text) as unknown;
  if (typeof header !== 'object' || header === null) throw new Error('not a JSON object');
  const v = header as Record<string, unknown>;
  if (v.knowledgeIndexSnapshot === FORMAT_ONE_OBJECT) return { ...(await decodeOneObject(v, where, shared)), outdated: true };
  if (v.knowledgeIndexSnapshot !== FORMAT) return null;
  const { head, tree, rules } = checkedHeader(v, where);
  if (typeof v.items !== 'number') throw new Error('no item count');
  const items: IndexEntry[] = [];
  // Each slice of lines is parsed, checked and made entries before the next turn of the event loop.
  const whole = await eachJsonLine(bytes, first.next, (item) => {
    items.push(entryOf(item, where, shared));
    return true;
  });
  // A line that is not JSON, or fewer lines than were written (a file cut at a line's end).
  if (!whole || items.length !== v.items) throw new Error(`${items.length} readable items of ${v.items}`);
  return { head, tree, items, rules };
}

/** Format 1: the items inside the one object, checked and made entries in slices. */
async function decodeOneObject(v: Record<string, unknown>, where: string, shared: SharedStrings): Promise<IndexSnapshot> {
  const { head, tree, rules } = checkedHeader(v, where);
  if (!Array.isArray(v.items)) throw new Error('no items');
  const items: IndexEntry[] = [];
  for (let i = 0; i < v.items.length; i++) {
    if (i > 0 && i % ITEMS_PER_TURN === 0) await nextTurn();
    items.push(entryOf(v.items[i], where, shared));
  }
  return { head, tree, items, rules };
}

function checkedHeader(v: Record<string, unknown>, where: string): { head: string; tree: string; rules: FolderRule[] } {
  if (typeof v.head !== 'string' || !isObjectId(v.head) || typeof v.tree !== 'string' || !isObjectId(v.tree)) throw new Error('no head');
  if (!Array.isArray(v.rules)) throw new Error('no folder rules');
  return { head: v.head, tree: v.tree, rules: v.rules.map((rule: unknown) => folderRuleFromValue(rule, where)) };
}

function entryOf(item: unknown, where: string, shared: SharedStrings): IndexEntry {
  if (!Array.isArray(item) || item.length !== 3) throw new Error('item is not [recordOid, blobOid, record]');
  const [recordOid, blobOid, record] = item as [unknown, unknown, unknown];
  if (typeof recordOid !== 'string' || !isObjectId(recordOid) || typeof blobOid !== 'string' || !isObjectId(blobOid)) throw new Error('bad object id');
  return { recordOid, blobOid, record: sharing(recordFromValue(record, where), shared) };
}

/**
 * The record with the strings 50,000 records repeat made one: who created, changed or deleted it (a few
 * keys write most items) and an `updatedAt` equal to its `createdAt` (an item never changed); its id and
 * path are shared with the history log loaded beside it. Each parsed apart held its own copy: 5.8 MiB at
 * 50,000 items, and the history log's ids and paths more (issue 17, measured in-process).
 */
function sharing(record: ItemRecord, shared: SharedStrings): ItemRecord {
  record.id = shared.string(record.id);
  record.path = shared.string(record.path);
  record.createdBy = shared.string(record.createdBy);
  record.updatedBy = shared.string(record.updatedBy);
  if (record.deletedBy !== null) record.deletedBy = shared.string(record.deletedBy);
  if (record.updatedAt === record.createdAt) record.updatedAt = record.createdAt;
  return record;
}

/**
 * Commits after which the index snapshot is saved again while the server runs
 * (it is saved at every stop too), bounding the catch-up after a crash.
 * Serializing 50,000 items takes ~100 ms of the event loop, hence not more often.
 */
const SNAPSHOT_EVERY = 10_000;

/** When the index snapshot is saved: at open, every SNAPSHOT_EVERY commits, and at close. */
export class SnapshotCadence {
  /** The head the saved snapshot describes. */
  private savedHead: string | null = null;
  private commitsSince = 0;

  constructor(
    private readonly file: IndexSnapshotFile,
    private readonly logger: Logger,
    private readonly orgId: string,
  ) {}

  /** After a (re)load: the saved snapshot describes `head` already, or nothing useful (null). */
  loaded(savedHead: string | null): void {
    this.savedHead = savedHead;
    this.commitsSince = 0;
  }

  /** Counts published commits; true when a save is due. */
  committed(commits: number): boolean {
    this.commitsSince += commits;
    return this.commitsSince >= SNAPSHOT_EVERY;
  }

  /** Saves the index of `head`, unless the saved one is of it already. A failure costs the next start time, nothing else. */
  async save(state: { head: string | null; rootTree: string | null; index: { iterate(): Iterable<IndexEntry>; folderRules(): FolderRule[] } }): Promise<void> {
    const { head, rootTree, index } = state;
    if (head === null || rootTree === null || head === this.savedHead) return;
    try {
      await this.file.write({ head, tree: rootTree, items: [...index.iterate()], rules: index.folderRules() });
      this.savedHead = head;
      this.commitsSince = 0;
    } catch (err) {
      this.logger.warn('could not save the index snapshot', { org: this.orgId, error: String(err) });
    }
  }
}
