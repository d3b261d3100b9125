import type { Logger } from '../../common/log.js';
import { silentMetrics, type Metrics } from '../../common/metrics.js';
import type { FsPromises } from '../fs/fs.js';
import type { GitCli, RepackReport } from '../git/gitCli.js';
import { checkGitDirectory } from '../git/gitDirectory.js';
import { writeLooseBlob } from '../git/looseObject.js';
import { readRef, removeStagedRefUpdates } from '../git/refs.js';
import { diffTreeFiles, listTreeFiles } from '../git/treeWalk.js';
import { DerivedViews, type DerivedView } from './derivedViews.js';
import { HistoryLog } from './historyLog.js';
import { loadIndex } from './indexLoader.js';
import { IndexSnapshotFile, SnapshotCadence } from './indexSnapshot.js';
import { ItemIndex, type IndexEntry } from './itemIndex.js';
import { contentPath, LAYOUT, parseFolderRule, parseRecord, type FolderRule, type ItemRecord } from './itemRecord.js';
import type { Lru } from '../../common/lru.js';
import { SharedStrings } from '../../common/sharedStrings.js';
import { ObjectReader } from './objectReader.js';
import { RepackSchedule } from './repackSchedule.js';
import { RepoCaches } from './repoCaches.js';
import type { SearchIndex } from '../search/searchIndex.js';
import { WritePipeline, type CommittedState, type Transaction, type WriteResult } from './writePipeline.js';

export type { CommitIntent, FolderRuleIntent, ItemIntent, WriteIntent } from './commitBuilder.js';
export type { RepoView, Transaction, WriteResult } from './writePipeline.js';

/** An item as it was at some commit: its record and where its content was. */
export interface ItemAtCommit {
  record: ItemRecord;
  blobOid: string;
}

/**
 * One organization's bare repository, as the domain sees it: reads answered
 * from the in-memory index and the history log, writes through the
 * repository's one write pipeline (see writePipeline.ts), and the views
 * derived from the branch kept up to date by that pipeline.
 *
 * The rooms behind it: `ObjectReader` (git reads), `loadIndex` (the index at
 * open, from the snapshot or the tree), `WritePipeline` (queue, group commit,
 * publish), `DerivedViews` (told after each publish), `RepackSchedule`,
 * `SnapshotCadence`.
 */
export class OrgRepo {
  private state: CommittedState = { index: new ItemIndex(), head: null, rootTree: null };
  private historyLog: HistoryLog | null = null;
  /** Contents by `<orgId>:<blob id>`, in the cache all the store's repositories share (see RepoCaches). */
  private readonly contentCache: Lru<string, string>;
  private readonly contentKey: (oid: string) => string;
  private readonly reader: ObjectReader;
  private readonly views: DerivedViews;
  private readonly pipeline: WritePipeline;
  private readonly snapshots: SnapshotCadence;
  private readonly snapshotFile: IndexSnapshotFile;
  private readonly repacks: RepackSchedule | null;
  private searchIndex: SearchIndex | null = null;

  private constructor(
    readonly orgId: string,
    private readonly fs: FsPromises,
    readonly gitdir: string,
    private readonly logger: Logger,
    private readonly git: GitCli | undefined,
    autoRepackObjects: number,
    metrics: Metrics,
    caches: RepoCaches,
  ) {
    this.contentCache = caches.contents;
    const prefix = `${orgId}:`;
    this.contentKey = (oid) => prefix + oid;
    this.reader = new ObjectReader(fs, gitdir, caches.objects);
    this.snapshotFile = new IndexSnapshotFile(fs, gitdir, logger);
    this.snapshots = new SnapshotCadence(this.snapshotFile, logger, orgId);
    this.repacks = git ? new RepackSchedule({ orgId, fs, gitdir, git, reader: this.reader, logger, metrics, autoRepackObjects }) : null;
    this.views = new DerivedViews(orgId, logger);
    // Contents just written are what the next reads ask for: keep them rather than read them back.
    this.views.add({ name: 'content cache', published: (b) => b.written.forEach((text, oid) => this.contentCache.set(this.contentKey(oid), text)) });
    this.views.add({ name: 'history log', published: (b) => this.history.append(b.commits) });
    this.pipeline = new WritePipeline({
      orgId,
      fs,
      gitdir,
      logger,
      metrics,
      trees: this.reader.trees,
      views: this.views,
      committed: () => this.state,
      advance: ({ overlay, head, root }) => {
        overlay.applyTo(this.state.index);
        this.state.head = head;
        this.state.rootTree = root;
        return this.state.index;
      },
      reload: () => this.load(),
      afterAnswer: async (batch) => {
        if (!batch) return;
        if (this.snapshots.committed(batch.commits.length)) await this.snapshots.save(this.state);
        this.repacks?.wrote(batch.flushed);
      },
    });
  }

  /** Opens the repository; without `git`, it is never repacked (tests, tools that only read). */
  static async open(args: {
    orgId: string;
    fs: FsPromises;
    gitdir: string;
    logger: Logger;
    git?: GitCli;
    autoRepackObjects?: number;
    metrics?: Metrics;
    /** What it keeps of what it reads and writes, shared with the store's other repositories (default: its own). */
    caches?: RepoCaches;
  }): Promise<OrgRepo> {
    const caches = args.caches ?? RepoCaches.atDefault();
    const repo = new OrgRepo(args.orgId, args.fs, args.gitdir, args.logger, args.git, args.autoRepackObjects ?? 0, args.metrics ?? silentMetrics, caches);
    await checkGitDirectory(args.fs, args.gitdir);
    await removeStagedRefUpdates(args.fs, args.gitdir);
    await repo.load();
    await repo.repacks?.start();
    return repo;
  }

  get headCommit(): string | null {
    return this.state.head;
  }

  /** Writes waiting for the write pipeline (GET /metrics). */
  get queuedWrites(): number {
    return this.pipeline.queued;
  }

  get itemCount(): number {
    return this.state.index.size;
  }

  get(path: string): IndexEntry | undefined {
    return this.state.index.get(path);
  }

  entries(options?: { prefix?: string; after?: string }): Iterable<IndexEntry> {
    return this.state.index.iterate(options);
  }

  folderRule(folder: string): FolderRule | undefined {
    return this.state.index.folderRule(folder);
  }

  /** Every folder rule, by folder path order. */
  folderRules(): FolderRule[] {
    return this.state.index.folderRules();
  }

  async readContent(entry: Pick<IndexEntry, 'blobOid'>): Promise<string> {
    const key = this.contentKey(entry.blobOid);
    const cached = this.contentCache.get(key);
    if (cached !== undefined) return cached;
    const text = await this.reader.blobText(entry.blobOid);
    this.contentCache.set(key, text);
    return text;
  }

  /**
   * Stores a file item's original bytes as blob `oid` (hashed by the caller), durably, before the
   * commit that names it is queued: the large write happens outside the write queue.
   */
  async storeFile(bytes: Uint8Array, oid: string): Promise<void> {
    await writeLooseBlob({ fs: this.fs, gitdir: this.gitdir, oid, bytes });
    this.repacks?.storedLoose();
  }

  /** A file item's original bytes (the blob its record's `fileKey` names). */
  readFile(fileKey: string): Promise<Buffer> {
    // Through our pack reader, loose or packed: large entries are read on their own (not through the shared
    // windows), inflated on the thread pool in one pass when over 1 MiB compressed, then hashed in slices. It was
    // a `git cat-file` per download once packed, whose spawn forked the whole server: 9.5 ms of its CPU per 1 MiB
    // download, and 7 ms of git's.
    return this.reader.blobBytes(fileKey);
  }

  /** The commits of main, and of each item: answered from the history log, not by walking git. */
  get history(): HistoryLog {
    if (!this.historyLog) throw new Error(`repository ${this.orgId} is not loaded`);
    return this.historyLog;
  }

  /** The item at `path` as it was in commit `commitId` (live or in the trash then), or null if there was none. */
  async readAt(commitId: string, path: string): Promise<ItemAtCommit | null> {
    const tree = await this.reader.treeOf(commitId);
    const recordOid = await this.reader.lookup(tree, LAYOUT.recordPath(path));
    if (!recordOid) return null;
    const record = parseRecord(await this.reader.blobText(recordOid), `${this.orgId}@${commitId}:${path}`);
    const blobOid = await this.reader.lookup(tree, contentPath(record));
    return blobOid ? { record, blobOid } : null;
  }

  /** The rule of `folder` as it was in commit `commitId`, or undefined when it had none. */
  async folderRuleAt(commitId: string, folder: string): Promise<FolderRule | undefined> {
    const oid = await this.reader.lookup(await this.reader.treeOf(commitId), LAYOUT.folderRulePath(folder));
    return oid ? parseFolderRule(await this.reader.blobText(oid), `${this.orgId}@${commitId}:${folder}`) : undefined;
  }

  /** The records of the items under `folder` (live or in the trash) as they were in commit `commitId`: reads that folder's records only. */
  async recordsUnder(commitId: string, folder: string): Promise<ItemRecord[]> {
    let oid = await this.reader.treeOf(commitId);
    for (const part of LAYOUT.recordPath(folder).split('/')) {
      const entry = (await this.reader.trees.entries(oid)).find((e) => e.path === part && e.type === 'tree');
      if (!entry) return [];
      oid = entry.oid;
    }
    const files = await listTreeFiles({ tree: oid, readTree: (tree) => this.reader.trees.entries(tree) });
    const records: ItemRecord[] = [];
    for (const [file, blob] of files) records.push(parseRecord(await this.reader.blobText(blob), `${this.orgId}@${commitId}:${folder}/${file}`));
    return records;
  }

  /** The folders whose rule commit `commitId` set, changed or removed (a diff with its parent: reads only what changed). */
  async foldersChangedBy(commitId: string, parent: string): Promise<string[]> {
    const changed = await diffTreeFiles({
      from: await this.reader.treeOf(parent),
      to: await this.reader.treeOf(commitId),
      readTree: (oid) => this.reader.trees.entries(oid),
    });
    return [...changed].map(LAYOUT.folderOfRulePath).filter((folder) => folder !== undefined);
  }

  /** Adds a view the write pipeline tells about every published batch (after those added before it). */
  addView(view: DerivedView): void {
    this.views.add(view);
  }

  /** Keeps `index` in step with every published batch from now on (it is caught up to this head, or catching up while batches come). */
  attachSearch(index: SearchIndex): void {
    this.searchIndex = index;
    this.views.add(index);
  }

  /** The full-text index, or null when this process keeps none (see OrgStore's `search`). */
  get search(): SearchIndex | null {
    return this.searchIndex;
  }

  /** Queues a transaction; resolves once its commit (if any) is durable and published. */
  write(txn: Transaction): Promise<WriteResult> {
    return this.pipeline.write(txn);
  }

  /** Folds the small packs of group commits together with C git (see RepackSchedule). */
  repack(): Promise<RepackReport> {
    if (!this.repacks) return Promise.reject(new Error(`repository ${this.orgId} was opened without C git; it cannot repack`));
    return this.repacks.repack();
  }

  /**
   * Nothing under way that a close would wait for or cut short: no write queued or in flight, no repack, no
   * search catch-up or load (OrgStore closes only such an organization when it has too many open).
   */
  get idle(): boolean {
    return this.pipeline.idle && !this.repacks?.busy && (this.searchIndex?.idle ?? true);
  }

  /** Refuses new writes, waits for the queued ones (and a running repack) to finish, and saves the index for a fast next start. */
  async close(): Promise<void> {
    try {
      await this.pipeline.close();
      await this.repacks?.settled();
      await this.snapshots.save(this.state);
    } finally {
      // The files are let go whatever failed above: an organization closed for being idle is opened again
      // in this same process, and a pack descriptor or a search connection kept here would be kept for good.
      try {
        this.searchIndex?.close();
      } finally {
        this.reader.close();
      }
    }
  }

  /** Reads the branch, the index and the history log from disk, and swaps them in at once. */
  private async load(): Promise<void> {
    const head = await readRef(this.fs, this.gitdir);
    const git = this.git;
    // Side by side: a history rebuilt from nothing streams from C git while the index is read here.
    // Both name the same items: their ids and paths are one string each (SharedStrings, dropped after).
    const shared = new SharedStrings();
    const [loaded, history] = await Promise.all([
      loadIndex({ orgId: this.orgId, head, reader: this.reader, snapshotFile: this.snapshotFile, logger: this.logger, shared }),
      HistoryLog.load({
        fs: this.fs,
        gitdir: this.gitdir,
        head,
        readCommit: (oid) => this.reader.commit(oid),
        ...(git ? { walk: (from: string) => git.firstParentLog(this.gitdir, from) } : {}),
        logger: this.logger,
        shared,
      }),
    ]);
    // Swap in one step: a reload after a failed flush replaces everything at once.
    this.state = { index: loaded.index, head, rootTree: loaded.rootTree };
    this.historyLog = history;
    this.snapshots.loaded(loaded.snapshotHead);
    await this.snapshots.save(this.state);
  }
}
