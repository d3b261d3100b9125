import git from 'isomorphic-git';
import type { Logger } from '../../common/log.js';
import { buildCommit, type WriteIntent } from './commitBuilder.js';
import { mapLimit } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';
import { IndexOverlay, ItemIndex, type IndexEntry, type IndexView } from './itemIndex.js';
import { HistoryLog, type CommitFacts, type HistoryEntry } from './historyLog.js';
import { LAYOUT, parseFolderRule, parseRecord, type FolderRule, type ItemRecord } from './itemRecord.js';
import { Lru } from './lru.js';
import { ObjectStager, type TreeEntry } from '../git/objectStager.js';
import { compareAndSwapRef, readRef } from '../git/refs.js';
import { TreeEditor } from '../git/treeEditor.js';
import { diffTreeFiles, listTreeFiles } from '../git/treeWalk.js';
import { IndexSnapshotFile, type IndexSnapshot } from './indexSnapshot.js';
import { blobObject } from '../git/objectFormat.js';
import { countObjects, repack, type RepackReport } from '../git/gitCli.js';

export type { FolderRuleIntent, ItemIntent, WriteIntent } from './commitBuilder.js';

/** An item as it was at some commit: its record and where its content was. */
export interface ItemAtCommit {
  record: ItemRecord;
  blobOid: string;
}

/** The view a transaction decides on: committed state plus earlier commits of the same batch. */
export interface RepoView extends IndexView {
  /** True when `content` is byte for byte the entry's stored content (compared by blob id, no read). */
  contentMatches(entry: IndexEntry, content: string): boolean;
}

/** Decides, against the current state, what to write; throws a domain error to refuse; null to write nothing. */
export type Transaction = (view: RepoView) => WriteIntent | null | Promise<WriteIntent | null>;

export interface WriteResult {
  commitId: string | null;
  /** The item as written (null for a purge, a folder rule, or no commit). */
  entry: IndexEntry | null;
}

/** A queued transaction and the caller waiting for it. */
interface PendingTxn {
  txn: Transaction;
  resolve: (result: WriteResult) => void;
  reject: (err: unknown) => void;
}

/** A batch whose commits are built (staged in memory) and not yet published. */
interface BuiltBatch {
  outcomes: Array<{ pending: PendingTxn; result?: WriteResult; error?: unknown }>;
  overlay: IndexOverlay;
  stager: ObjectStager;
  written: Map<string, string>;
  published: HistoryEntry[];
  /** The branch before and after the batch. */
  parent: string | null;
  head: string | null;
  root: string | null;
}

/** Most commits written, flushed and published together by one group commit. */
const MAX_BATCH = 256;

/**
 * Commits after which the index snapshot is saved again while the server runs
 * (it is saved at every stop too), bounding the catch-up after a crash.
 * Serializing 50,000 items takes ~100 ms of the event loop, hence not more often.
 */
const SNAPSHOT_EVERY = 10_000;

const RULE_FILE = '/.rule.json';

/** Waits before each retry of a failed read (see fromGit). */
const READ_RETRY_MS = [0, 10, 50, 200];

/**
 * Packs (one per group commit) beyond which an automatic repack folds them
 * together. Higher than git's gc.autoPackLimit (50): each geometric repack
 * costs git a fixed ~0.4 s of CPU at 50,000 items (it reads the large pack's
 * index), which at 50 packs took a third of the server's core under one writer.
 */
const AUTO_REPACK_PACKS = 200;

/**
 * One organization's bare repository (design.md, storage rules 1–6).
 *
 * Writes go through one queue per organization. The queue runs transactions
 * one after another against the in-memory index; each accepted one becomes its
 * own commit. Everything a queue turn produced is flushed with one round of
 * fsyncs and published with one compare-and-swap of `refs/heads/main` (group
 * commit), and only then are the callers answered and the index updated. Reads
 * never wait for writes: they see the last durable state.
 */
export class OrgRepo {
  private index = new ItemIndex();
  private readonly contentCache = new Lru<string, string>(64 * 1024 * 1024, (s) => s.length * 2 + 64);
  /** isomorphic-git's own cache (pack indexes and pack data): one per repository, replaced after a repack. */
  private gitCache: object = {};
  /** Objects written (as loose objects, before packs per batch, or in packs) since the last repack. */
  private objectsSinceRepack = 0;
  /** Packs in the repository: one per group commit, until a repack folds them together. */
  private packs = 0;
  private readonly gitFs: { promises: FsPromises };
  private readonly trees: TreeEditor;
  private queue: PendingTxn[] = [];
  private repacking: Promise<RepackReport> | null = null;
  /** True while `drain` runs; cleared in the same step as its last look at the queue (no lost wake-ups). */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  private closed = false;
  private head: string | null = null;
  private rootTree: string | null = null;
  private historyLog: HistoryLog | null = null;
  private readonly commitTrees = new Lru<string, string>(10_000);
  private readonly snapshotFile: IndexSnapshotFile;
  /** The head the saved index snapshot describes. */
  private snapshotHead: string | null = null;
  private commitsSinceSnapshot = 0;

  private constructor(
    readonly orgId: string,
    private readonly fs: FsPromises,
    readonly gitdir: string,
    private readonly logger: Logger,
    /** Repack automatically once this many loose objects pile up (0: never). */
    private readonly autoRepackObjects: number,
  ) {
    this.gitFs = { promises: hidePackTemporaries(fs) };
    this.snapshotFile = new IndexSnapshotFile(fs, gitdir, logger);
    this.trees = new TreeEditor((oid) =>
      this.fromGit(async (cache) => (await git.readTree({ fs: this.gitFs, gitdir, oid, cache })).tree as TreeEntry[]),
    );
  }

  static async open(args: {
    orgId: string;
    fs: FsPromises;
    gitdir: string;
    logger: Logger;
    autoRepackObjects?: number;
  }): Promise<OrgRepo> {
    const repo = new OrgRepo(args.orgId, args.fs, args.gitdir, args.logger, args.autoRepackObjects ?? 0);
    await repo.load();
    if (repo.autoRepackObjects > 0) {
      const counts = await countObjects(args.gitdir);
      repo.objectsSinceRepack = counts.loose;
      repo.packs = counts.packs;
    }
    return repo;
  }

  /**
   * Reads through isomorphic-git. A repack deletes the packs it rolled up, maybe
   * while a read is searching them: a read that fails is tried again with a
   * fresh cache (which lists the packs anew), a few times, a little later each
   * time, since git unlinks the rolled-up packs one by one. Objects never
   * change, so a retry is always safe; a real fault fails every time.
   */
  private async fromGit<T>(read: (cache: object) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read(this.gitCache);
      } catch (err) {
        if (attempt >= READ_RETRY_MS.length) throw err;
        await new Promise((resolve) => setTimeout(resolve, READ_RETRY_MS[attempt]));
        this.gitCache = {};
      }
    }
  }

  /**
   * After a repack, forgets only the packs that are gone. isomorphic-git keeps a
   * whole pack in memory once read (and checks its SHA-1): starting over with an
   * empty cache would re-read the large packs after every repack, which at
   * 50,000 items is tens of megabytes, several times a second under writes.
   */
  private async forgetDeletedPacks(): Promise<void> {
    const cache = this.gitCache as Record<symbol, unknown>;
    const live = new Set((await this.fs.readdir(`${this.gitdir}/objects/pack`).catch(() => [] as string[])).map((n) => `${this.gitdir}/objects/pack/${n}`));
    for (const key of Object.getOwnPropertySymbols(cache)) {
      const map = cache[key];
      if (!(map instanceof Map)) continue;
      for (const name of [...map.keys()]) {
        if (typeof name === 'string' && name.includes('/objects/pack/') && !live.has(name)) map.delete(name);
      }
    }
  }

  /**
   * Folds the small packs of group commits (and any loose objects) into larger
   * ones with C git (design.md, rule 9). It runs beside the write queue, not in
   * it: a geometric repack only removes the packs it rolled up, never a pack
   * written while it ran, and reads that find a pack gone retry. One at a time.
   */
  repack(): Promise<RepackReport> {
    this.repacking ??= this.repackNow().finally(() => {
      this.repacking = null;
    });
    return this.repacking;
  }

  private async repackNow(): Promise<RepackReport> {
    const report = await repack(this.gitdir);
    await this.forgetDeletedPacks();
    this.objectsSinceRepack = report.after.loose;
    // Counted after git finished: packs written while it ran are in the count already.
    this.packs = report.after.packs;
    this.logger.info('repacked', { org: this.orgId, ...report });
    return report;
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = true;
    this.drained = this.drain();
  }

  get headCommit(): string | null {
    return this.head;
  }

  get itemCount(): number {
    return this.index.size;
  }

  get(path: string): IndexEntry | undefined {
    return this.index.get(path);
  }

  entries(options?: { prefix?: string; after?: string }): Iterable<IndexEntry> {
    return this.index.iterate(options);
  }

  folderRule(folder: string): FolderRule | undefined {
    return this.index.folderRule(folder);
  }

  /** Every folder rule, by folder path order. */
  folderRules(): FolderRule[] {
    return this.index.folderRules();
  }

  async readContent(entry: Pick<IndexEntry, 'blobOid'>): Promise<string> {
    const cached = this.contentCache.get(entry.blobOid);
    if (cached !== undefined) return cached;
    const text = await this.readBlobText(entry.blobOid);
    this.contentCache.set(entry.blobOid, text);
    return text;
  }

  /** The commits of main, and of each item: answered from the history log, not by walking git. */
  get history(): HistoryLog {
    if (!this.historyLog) throw new Error(`repository ${this.orgId} is not loaded`);
    return this.historyLog;
  }

  /** The item at `path` as it was in commit `commitId` (live or in the trash then), or null if there was none. */
  async readAt(commitId: string, path: string): Promise<ItemAtCommit | null> {
    const tree = await this.treeOf(commitId);
    const recordOid = await this.lookup(tree, LAYOUT.recordPath(path));
    if (!recordOid) return null;
    const record = parseRecord(await this.readBlobText(recordOid), `${this.orgId}@${commitId}:${path}`);
    const blobOid = await this.lookup(tree, record.deletedAt ? LAYOUT.trashPath(path) : path);
    return blobOid ? { record, blobOid } : null;
  }

  /** The rule of `folder` as it was in commit `commitId`, or undefined when it had none. */
  async folderRuleAt(commitId: string, folder: string): Promise<FolderRule | undefined> {
    const oid = await this.lookup(await this.treeOf(commitId), LAYOUT.folderRulePath(folder));
    return oid ? parseFolderRule(await this.readBlobText(oid), `${this.orgId}@${commitId}:${folder}`) : undefined;
  }

  /** The folders whose rule commit `commitId` set, changed or removed (a diff with its parent: reads only what changed). */
  async foldersChangedBy(commitId: string, parent: string): Promise<string[]> {
    const rulePrefix = `${LAYOUT.foldersRoot}/`;
    const changed = await diffTreeFiles({
      from: await this.treeOf(parent),
      to: await this.treeOf(commitId),
      readTree: (oid) => this.trees.entries(oid),
    });
    return [...changed].filter((f) => f.startsWith(rulePrefix) && f.endsWith(RULE_FILE)).map((f) => f.slice(rulePrefix.length, -RULE_FILE.length));
  }

  private async treeOf(commitId: string): Promise<string> {
    return this.commitTrees.get(commitId) ?? (await this.commitFacts(commitId)).tree;
  }

  /** The blob at `path` in `tree`, or undefined: a file where a folder of the path should be ends the walk, as a missing entry does. */
  private async lookup(tree: string, path: string): Promise<string | undefined> {
    const parts = path.split('/');
    let oid = tree;
    for (const [i, part] of parts.entries()) {
      const entry: TreeEntry | undefined = (await this.trees.entries(oid)).find((e) => e.path === part);
      if (!entry || entry.type !== (i === parts.length - 1 ? 'blob' : 'tree')) return undefined;
      oid = entry.oid;
    }
    return oid;
  }

  private async readBlobText(oid: string): Promise<string> {
    const { blob } = await this.fromGit((cache) => git.readBlob({ fs: this.gitFs, gitdir: this.gitdir, oid, cache }));
    return Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).toString('utf8');
  }

  private async commitFacts(oid: string): Promise<CommitFacts & { tree: string }> {
    const { commit } = await this.fromGit((cache) => git.readCommit({ fs: this.gitFs, gitdir: this.gitdir, oid, cache }));
    this.commitTrees.set(oid, commit.tree);
    return { parent: commit.parent[0] ?? null, message: commit.message, author: commit.author, tree: commit.tree };
  }

  /** Queues a transaction; resolves once its commit (if any) is durable and published. */
  write(txn: Transaction): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new Error(`repository ${this.orgId} is closed`));
    return new Promise<WriteResult>((resolve, reject) => {
      this.queue.push({ txn, resolve, reject });
      this.kick();
    });
  }

  /** Refuses new writes, waits for the queued ones (and a running repack) to finish, and saves the index for a fast next start. */
  async close(): Promise<void> {
    this.closed = true;
    await this.drained;
    await this.repacking?.catch(() => undefined);
    await this.saveSnapshot();
  }

  /**
   * Runs the queue as a pipeline of two stages: while one batch is being made
   * durable (fsyncs: the CPU would idle), the next is built on top of it in
   * memory. A batch is published only after the one before it, and if that one
   * failed, the next (which decided on its state) fails too, unpublished.
   */
  private async drain(): Promise<void> {
    let publishing: Promise<boolean> | null = null;
    let previous: BuiltBatch | null = null;
    try {
      while (this.queue.length > 0 || publishing) {
        if (this.queue.length === 0) {
          await publishing;
          publishing = null;
          previous = null;
          continue;
        }
        const batch = this.queue.splice(0, MAX_BATCH);
        const built = await this.buildBatch(batch, previous);
        if (publishing && !(await publishing)) {
          for (const o of built.outcomes) o.pending.reject(o.error ?? new Error('an earlier commit of the same group failed; nothing was published'));
          publishing = null;
          previous = null;
          continue;
        }
        // The batch before is in the index now: read through it directly.
        built.overlay.rebase(this.index);
        publishing = this.publish(built);
        previous = built;
      }
    } finally {
      // In the same step as the loop's last look at an empty queue, with no await between:
      // a write queued from here on finds the flag down and starts a new drain.
      this.draining = false;
    }
  }

  /**
   * Every read that misses the loose objects lists and searches the packs one by
   * one, so packs must not pile up: past AUTO_REPACK_PACKS, or once the
   * configured number of objects was written, C git folds them together.
   */
  private repackDue(): boolean {
    return this.autoRepackObjects > 0 && (this.packs >= AUTO_REPACK_PACKS || this.objectsSinceRepack >= this.autoRepackObjects);
  }

  /** Runs each transaction against the state after `previous` (or the committed state) and stages its commit. */
  private async buildBatch(batch: PendingTxn[], previous: BuiltBatch | null): Promise<BuiltBatch> {
    const overlay = new IndexOverlay(previous?.overlay ?? this.index);
    const view: RepoView = {
      get: (path) => overlay.get(path),
      hasEntriesUnder: (folder) => overlay.hasEntriesUnder(folder),
      folderRule: (folder) => overlay.folderRule(folder),
      contentMatches: (entry, content) => blobObject(Buffer.from(content, 'utf8')).oid === entry.blobOid,
    };
    const parent = previous ? previous.head : this.head;
    const built: BuiltBatch = { outcomes: [], overlay, stager: new ObjectStager(), written: new Map(), published: [], parent, head: parent, root: previous ? previous.root : this.rootTree };
    for (const pending of batch) {
      try {
        const intent = await pending.txn(view);
        if (!intent) {
          built.outcomes.push({ pending, result: { commitId: null, entry: null } });
          continue;
        }
        const commit = await buildCommit({ intent, overlay, head: built.head, root: built.root, stager: built.stager, written: built.written, trees: this.trees });
        built.published.push(commit.history);
        built.head = commit.commitId;
        built.root = commit.root;
        if (intent.mutation === 'folderRule') overlay.setFolderRule(intent.folder, intent.rule);
        else overlay.set(intent.path, commit.entry);
        built.outcomes.push({ pending, result: { commitId: commit.commitId, entry: commit.entry } });
      } catch (error) {
        built.outcomes.push({ pending, error });
      }
    }
    built.stager.seal();
    return built;
  }

  /**
   * Makes a built batch durable (one pack, one compare-and-swap of main), then
   * updates the index and answers the callers. Resolves false when nothing
   * could be published; the repository is re-read from disk then.
   */
  private async publish(built: BuiltBatch): Promise<boolean> {
    const { outcomes } = built;
    if (built.head !== built.parent && built.head !== null) {
      try {
        const flushed = await built.stager.flush(this.fs, this.gitdir);
        this.objectsSinceRepack += flushed.objects;
        this.packs += flushed.packs;
        await compareAndSwapRef({ fs: this.fs, gitdir: this.gitdir, expected: built.parent, next: built.head });
      } catch (error) {
        this.logger.error('commit failed; nothing was published', { org: this.orgId, error: String(error) });
        // Re-read the branch before answering, so a caller that retries at once sees what is really there.
        await this.load().catch((err: unknown) => this.logger.error('reload failed', { org: this.orgId, error: String(err) }));
        // Nobody in this batch may see success: later transactions decided on state that is not durable.
        for (const o of outcomes) o.pending.reject(o.error === undefined ? error : o.error);
        return false;
      }
      built.overlay.applyTo(this.index);
      this.head = built.head;
      this.rootTree = built.root;
      for (const [oid, text] of built.written) this.contentCache.set(oid, text);
      await this.history.append(built.published);
      this.commitsSinceSnapshot += built.published.length;
    }
    for (const o of outcomes) {
      if (o.result) o.pending.resolve(o.result);
      else o.pending.reject(o.error);
    }
    if (this.commitsSinceSnapshot >= SNAPSHOT_EVERY) await this.saveSnapshot();
    if (this.repackDue() && !this.repacking) {
      this.repack().catch((err: unknown) => this.logger.warn('automatic repack failed', { org: this.orgId, error: String(err) }));
    }
    return true;
  }

  /**
   * Builds the index for the head commit: from the saved snapshot when it is of
   * this head; from an older snapshot plus the files that changed since (a diff
   * of the two root trees); otherwise from the tree itself, one read per
   * sidecar record. History is never replayed. Items whose record and content
   * disagree are left out and reported (`knowledge-store verify` names them).
   */
  private async load(): Promise<void> {
    const head = await readRef(this.fs, this.gitdir);
    let index = new ItemIndex();
    let rootTree: string | null = null;
    let snapshotHead: string | null = null;
    if (head) {
      rootTree = (await this.commitFacts(head)).tree;
      const snapshot = await this.snapshotFile.read();
      if (snapshot) index = indexFromSnapshot(snapshot);
      if (snapshot?.head === head) snapshotHead = head;
      else if (snapshot) {
        const started = Date.now();
        const changed = await this.catchUp(index, snapshot.tree, rootTree).catch((err: unknown) => {
          this.logger.warn('index snapshot could not be brought up to date; rebuilding from git', { org: this.orgId, error: String(err) });
          return null;
        });
        if (changed === null) index = await this.indexFromTree(rootTree);
        else this.logger.info('index snapshot caught up', { org: this.orgId, files: changed, ms: Date.now() - started });
      } else {
        index = await this.indexFromTree(rootTree);
      }
    }
    const history = await HistoryLog.load({
      fs: this.fs,
      gitdir: this.gitdir,
      head,
      readCommit: (oid) => this.commitFacts(oid),
      logger: this.logger,
    });
    // Swap in one step: a reload after a failed flush replaces everything at once.
    this.index = index;
    this.historyLog = history;
    this.head = head;
    this.rootTree = rootTree;
    this.snapshotHead = snapshotHead;
    this.commitsSinceSnapshot = 0;
    await this.saveSnapshot();
  }

  /** The index from the tree alone: every record read from git (a first start, or a lost snapshot). */
  private async indexFromTree(rootTree: string): Promise<ItemIndex> {
    const index = new ItemIndex();
    const files = await listTreeFiles({ tree: rootTree, readTree: (oid) => this.trees.entries(oid) });
    const prefix = `${LAYOUT.itemsRoot}/`;
    const recordPaths = [...files.keys()].filter((p) => p.startsWith(prefix));
    await mapLimit(recordPaths, 32, async (recordPath) => {
      const path = recordPath.slice(prefix.length);
      index.set(path, await this.entryAt(path, files.get(recordPath) as string, async (p) => files.get(p)));
    });
    const rulePrefix = `${LAYOUT.foldersRoot}/`;
    for (const [file, oid] of files) {
      if (!file.startsWith(rulePrefix) || !file.endsWith(RULE_FILE)) continue;
      const rule = parseFolderRule(await this.readBlobText(oid), `${this.orgId}:${file}`);
      index.setFolderRule(file.slice(rulePrefix.length, -RULE_FILE.length), rule);
    }
    return index;
  }

  /**
   * Applies to `index` (of the tree `from`) what changed up to the tree `to`:
   * the items and folder rules whose files differ are read again. Returns how
   * many files differed.
   */
  private async catchUp(index: ItemIndex, from: string, to: string): Promise<number> {
    const changed = await diffTreeFiles({ from, to, readTree: (oid) => this.trees.entries(oid) });
    const items = new Set<string>();
    const rulePrefix = `${LAYOUT.foldersRoot}/`;
    for (const file of changed) {
      if (file.startsWith(rulePrefix) && file.endsWith(RULE_FILE)) {
        const oid = await this.lookup(to, file);
        const folder = file.slice(rulePrefix.length, -RULE_FILE.length);
        index.setFolderRule(folder, oid ? parseFolderRule(await this.readBlobText(oid), `${this.orgId}:${file}`) : null);
      } else if (file.startsWith(`${LAYOUT.itemsRoot}/`)) items.add(file.slice(LAYOUT.itemsRoot.length + 1));
      else if (file.startsWith(`${LAYOUT.trashRoot}/`)) items.add(file.slice(LAYOUT.trashRoot.length + 1));
      else if (!file.startsWith('.')) items.add(file);
    }
    await mapLimit([...items], 32, async (path) => {
      const recordOid = await this.lookup(to, LAYOUT.recordPath(path));
      index.set(path, recordOid ? await this.entryAt(path, recordOid, (p) => this.lookup(to, p)) : null);
    });
    return changed.size;
  }

  /** The index entry of the item whose record is `recordOid`, or null (reported) when record and tree disagree. */
  private async entryAt(path: string, recordOid: string, blobAt: (path: string) => Promise<string | undefined>): Promise<IndexEntry | null> {
    const record = parseRecord(await this.readBlobText(recordOid), `${this.orgId}:${LAYOUT.recordPath(path)}`);
    const blobOid = await blobAt(record.deletedAt ? LAYOUT.trashPath(path) : path);
    if (record.path !== path || !blobOid) {
      this.logger.warn('item record and tree disagree; item left out', { org: this.orgId, path });
      return null;
    }
    return { record, blobOid, recordOid };
  }

  /** Saves the index for the current head, unless the saved one is of it already. A failure costs the next start time, nothing else. */
  private async saveSnapshot(): Promise<void> {
    if (this.head === null || this.rootTree === null || this.head === this.snapshotHead) return;
    const head = this.head;
    try {
      await this.snapshotFile.write({ head, tree: this.rootTree, items: [...this.index.iterate()], rules: this.index.folderRules() });
      this.snapshotHead = head;
      this.commitsSinceSnapshot = 0;
    } catch (err) {
      this.logger.warn('could not save the index snapshot', { org: this.orgId, error: String(err) });
    }
  }
}

function indexFromSnapshot(snapshot: IndexSnapshot): ItemIndex {
  const index = new ItemIndex();
  for (const entry of snapshot.items) index.set(entry.record.path, entry);
  for (const rule of snapshot.rules) index.setFolderRule(rule.folder, rule);
  return index;
}

/**
 * isomorphic-git takes every `*.idx` in objects/pack for a pack index, including
 * the `.tmp-*` files C git writes while it builds a pack (and leaves behind when
 * interrupted). C git ignores dot-files there; so does the view we give isomorphic-git.
 */
function hidePackTemporaries(fs: FsPromises): FsPromises {
  const view = Object.create(fs) as FsPromises;
  view.readdir = async (path: string) => {
    const names = await fs.readdir(path);
    return path.endsWith('/objects/pack') ? names.filter((n) => !n.startsWith('.')) : names;
  };
  return view;
}
