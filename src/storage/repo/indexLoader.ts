import type { Logger } from '../../common/log.js';
import type { SharedStrings } from '../../common/sharedStrings.js';
import { withoutYoungGrowth } from '../../common/youngGeneration.js';
import { ITEMS_PER_TURN, nextTurn } from '../../common/turn.js';
import { mapLimit } from '../fs/durable.js';
import { diffTreeFiles, listTreeFiles } from '../git/treeWalk.js';
import type { IndexSnapshot, IndexSnapshotFile } from './indexSnapshot.js';
import { ItemIndex, type IndexEntry } from './itemIndex.js';
import { contentPath, LAYOUT, parseFolderRule, parseRecord } from './itemRecord.js';
import type { ObjectReader } from './objectReader.js';

/** What a repository is at its head: the index, and the head's root tree. */
export interface LoadedIndex {
  index: ItemIndex;
  rootTree: string | null;
  /** The head that the saved snapshot already describes (nothing to save), or null. */
  snapshotHead: string | null;
}

/**
 * Builds the index for the head commit: from the saved snapshot when it is of
 * this head; from an older snapshot plus the files that changed since (a diff
 * of the two root trees); otherwise from the tree itself, one read per
 * sidecar record. History is never replayed. Items whose record and content
 * disagree are left out and reported (`knowledge-store verify` names them).
 */
export async function loadIndex(args: {
  orgId: string;
  head: string | null;
  reader: ObjectReader;
  snapshotFile: IndexSnapshotFile;
  logger: Logger;
  /** Strings shared with what is loaded beside the index (see IndexSnapshotFile.read). */
  shared?: SharedStrings;
}): Promise<LoadedIndex> {
  const { orgId, head, logger } = args;
  if (!head) return { index: new ItemIndex(), rootTree: null, snapshotHead: null };
  const loader = new Loader(orgId, args.reader, logger);
  const rootTree = (await args.reader.commit(head)).tree;
  // Read and indexed without growing V8's young generation: nearly all of it is kept (see withoutYoungGrowth).
  const read = await withoutYoungGrowth(async () => {
    const snapshot = await args.snapshotFile.read(args.shared);
    return snapshot && { snapshot, index: await indexFromSnapshot(snapshot) };
  });
  if (!read) return { index: await loader.fromTree(rootTree), rootTree, snapshotHead: null };
  const { snapshot, index } = read;
  // A snapshot of an earlier format is saved again (as this one) even when it is of the head.
  if (snapshot.head === head) return { index, rootTree, snapshotHead: snapshot.outdated ? null : head };
  const started = Date.now();
  try {
    const files = await loader.catchUp(index, snapshot.tree, rootTree);
    logger.info('index snapshot caught up', { org: orgId, files, ms: Date.now() - started });
    return { index, rootTree, snapshotHead: null };
  } catch (err) {
    logger.warn('index snapshot could not be brought up to date; rebuilding from git', { org: orgId, error: String(err) });
    return { index: await loader.fromTree(rootTree), rootTree, snapshotHead: null };
  }
}

/** In slices, with a turn of the event loop between (~30 ms at 50,000 items in one piece). */
async function indexFromSnapshot(snapshot: IndexSnapshot): Promise<ItemIndex> {
  const index = new ItemIndex();
  for (let i = 0; i < snapshot.items.length; i++) {
    if (i > 0 && i % ITEMS_PER_TURN === 0) await nextTurn();
    const entry = snapshot.items[i] as IndexEntry;
    index.set(entry.record.path, entry);
  }
  for (const rule of snapshot.rules) index.setFolderRule(rule.folder, rule);
  return index;
}

class Loader {
  constructor(
    private readonly orgId: string,
    private readonly reader: ObjectReader,
    private readonly logger: Logger,
  ) {}

  /** The index from the tree alone: every record read from git (a first start, or a lost snapshot). */
  async fromTree(rootTree: string): Promise<ItemIndex> {
    const index = new ItemIndex();
    const files = await listTreeFiles({ tree: rootTree, readTree: (oid) => this.reader.trees.entries(oid) });
    const prefix = `${LAYOUT.itemsRoot}/`;
    const recordPaths = [...files.keys()].filter((p) => p.startsWith(prefix));
    await mapLimit(recordPaths, 32, async (recordPath) => {
      const path = recordPath.slice(prefix.length);
      index.set(path, await this.entryAt(path, files.get(recordPath) as string, async (p) => files.get(p)));
    });
    for (const [file, oid] of files) {
      const folder = LAYOUT.folderOfRulePath(file);
      if (folder !== undefined) index.setFolderRule(folder, parseFolderRule(await this.reader.blobText(oid), `${this.orgId}:${file}`));
    }
    return index;
  }

  /**
   * Applies to `index` (of the tree `from`) what changed up to the tree `to`:
   * the items and folder rules whose files differ are read again. Returns how
   * many files differed.
   */
  async catchUp(index: ItemIndex, from: string, to: string): Promise<number> {
    const changed = await diffTreeFiles({ from, to, readTree: (oid) => this.reader.trees.entries(oid) });
    const items = new Set<string>();
    for (const file of changed) {
      const folder = LAYOUT.folderOfRulePath(file);
      if (folder !== undefined) {
        const oid = await this.reader.lookup(to, file);
        index.setFolderRule(folder, oid ? parseFolderRule(await this.reader.blobText(oid), `${this.orgId}:${file}`) : null);
        continue;
      }
      const item = LAYOUT.itemOfPath(file);
      if (item !== undefined) items.add(item);
    }
    await mapLimit([...items], 32, async (path) => {
      const recordOid = await this.reader.lookup(to, LAYOUT.recordPath(path));
      index.set(path, recordOid ? await this.entryAt(path, recordOid, (p) => this.reader.lookup(to, p)) : null);
    });
    return changed.size;
  }

  /** The index entry of the item whose record is `recordOid`, or null (reported) when record and tree disagree. */
  private async entryAt(path: string, recordOid: string, blobAt: (path: string) => Promise<string | undefined>): Promise<IndexEntry | null> {
    const record = parseRecord(await this.reader.blobText(recordOid), `${this.orgId}:${LAYOUT.recordPath(path)}`);
    const blobOid = await blobAt(contentPath(record));
    if (record.path !== path || !blobOid) {
      this.logger.warn('item record and tree disagree; item left out', { org: this.orgId, path });
      return null;
    }
    return { record, blobOid, recordOid };
  }
}
