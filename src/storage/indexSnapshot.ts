import { errnoCode } from '../errors.js';
import type { Logger } from '../log.js';
import { writeFileDurable } from './durable.js';
import type { FsPromises } from './fs.js';
import type { IndexEntry } from './itemIndex.js';
import { folderRuleFromValue, recordFromValue, type FolderRule } from './itemRecord.js';

/** The format marker: a snapshot of another format is ignored (and rewritten), never misread. */
const FORMAT = 1;

/** The item index as it was at one commit of main. */
export interface IndexSnapshot {
  head: string;
  /** The head commit's root tree: what a later head is compared against to catch up. */
  tree: string;
  items: IndexEntry[];
  rules: FolderRule[];
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

  async read(): Promise<IndexSnapshot | null> {
    let text: string;
    try {
      text = await this.fs.readFile(this.path, 'utf8');
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') this.logger.warn('index snapshot unreadable; rebuilding from git', { error: String(err) });
      return null;
    }
    try {
      return decode(JSON.parse(text) as unknown, this.path);
    } catch (err) {
      this.logger.warn('index snapshot damaged; rebuilding from git', { error: String(err) });
      return null;
    }
  }

  async write(snapshot: IndexSnapshot): Promise<void> {
    const items = snapshot.items.map((e) => [e.recordOid, e.blobOid, e.record]);
    const text = JSON.stringify({ knowledgeIndexSnapshot: FORMAT, head: snapshot.head, tree: snapshot.tree, items, rules: snapshot.rules });
    await writeFileDurable(this.fs, this.path, text);
  }
}

const OID = /^[0-9a-f]{40}$/;

function decode(value: unknown, where: string): IndexSnapshot | null {
  if (typeof value !== 'object' || value === null) throw new Error('not a JSON object');
  const v = value as Record<string, unknown>;
  if (v.knowledgeIndexSnapshot !== FORMAT) return null;
  if (typeof v.head !== 'string' || !OID.test(v.head) || typeof v.tree !== 'string' || !OID.test(v.tree)) throw new Error('no head');
  if (!Array.isArray(v.items) || !Array.isArray(v.rules)) throw new Error('no items');
  const items = v.items.map((item: unknown): IndexEntry => {
    if (!Array.isArray(item) || item.length !== 3) throw new Error('item is not [recordOid, blobOid, record]');
    const [recordOid, blobOid, record] = item as [unknown, unknown, unknown];
    if (typeof recordOid !== 'string' || !OID.test(recordOid) || typeof blobOid !== 'string' || !OID.test(blobOid)) throw new Error('bad object id');
    return { recordOid, blobOid, record: recordFromValue(record, where) };
  });
  const rules = v.rules.map((rule: unknown) => folderRuleFromValue(rule, where));
  return { head: v.head, tree: v.tree, items, rules };
}
