import { createHash } from 'node:crypto';
import git from 'isomorphic-git';
import type { Logger } from '../log.js';
import { buildCommit, type WriteIntent } from './commitBuilder.js';
import { mapLimit } from './durable.js';
import type { FsPromises } from './fs.js';
import { IndexOverlay, ItemIndex, type IndexEntry, type IndexView } from './itemIndex.js';
import { HistoryLog, type CommitFacts, type HistoryEntry } from './historyLog.js';
import { LAYOUT, parseFolderRule, parseRecord, type FolderRule, type ItemRecord } from './itemRecord.js';
import { Lru } from './lru.js';
import { ObjectStager, type TreeEntry } from './objectStager.js';
import { compareAndSwapRef, readRef } from './refs.js';
import { TreeEditor } from './treeEditor.js';
import { listTreeFiles } from './treeWalk.js';
import { countObjects, repack, type RepackReport } from './gitService.js';

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

/** A queued transaction, or an exclusive job (repack) that runs alone, between batches. */
type Pending =
  | { kind: 'txn'; txn: Transaction; resolve: (result: WriteResult) => void; reject: (err: unknown) => void }
  | { kind: 'exclusive'; run: () => Promise<unknown>; resolve: (value: unknown) => void; reject: (err: unknown) => void };
type PendingTxn = Extract<Pending, { kind: 'txn' }>;

/** Most commits written, flushed and published together by one group commit. */
const MAX_BATCH = 256;

export function hashBlob(content: Uint8Array): string {
  return createHash('sha1').update(`blob ${content.byteLength}\0`).update(content).digest('hex');
}

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
  /** Loose objects in the repository (counted at open, then by what we write); a repack resets it. */
  private looseObjects = 0;
  private readonly gitFs: { promises: FsPromises };
  private readonly trees: TreeEditor;
  private queue: Pending[] = [];
  /** True while `drain` runs; cleared in the same step as its last look at the queue (no lost wake-ups). */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  private closed = false;
  private head: string | null = null;
  private rootTree: string | null = null;
  private historyLog: HistoryLog | null = null;
  private readonly commitTrees = new Lru<string, string>(10_000);

  private constructor(
    readonly orgId: string,
    private readonly fs: FsPromises,
    readonly gitdir: string,
    private readonly logger: Logger,
    /** Repack automatically once this many loose objects pile up (0: never). */
    private readonly autoRepackObjects: number,
  ) {
    this.gitFs = { promises: hidePackTemporaries(fs) };
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
    if (repo.autoRepackObjects > 0) repo.looseObjects = (await countObjects(args.gitdir)).loose;
    return repo;
  }

  /**
   * Reads through isomorphic-git. A repack may delete a pack whose index the
   * cache still holds: a read that finds an object missing retries once with a
   * fresh cache, which lists the packs anew.
   */
  private async fromGit<T>(read: (cache: object) => Promise<T>): Promise<T> {
    try {
      return await read(this.gitCache);
    } catch {
      // Objects never change, so a read that failed may simply be tried again: the error may come
      // from a pack that `repack -a -d` deleted after the cache listed it (ENOENT, "Could not read
      // packfile", a half-read index). A fresh cache lists the packs anew; a real fault fails twice.
      this.gitCache = {};
      return read(this.gitCache);
    }
  }

  /**
   * Packs loose objects with C git (`git repack -d`; `-a` as well once packs pile
   * up), alone in the write queue: writes wait, reads go on (design.md, rule 9).
   */
  repack(): Promise<RepackReport> {
    return this.exclusive(() => this.repackNow());
  }

  private async repackNow(): Promise<RepackReport> {
    const report = await repack(this.gitdir);
    this.gitCache = {};
    this.looseObjects = report.after.loose;
    this.logger.info('repacked', { org: this.orgId, ...report });
    return report;
  }

  private exclusive<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`repository ${this.orgId} is closed`));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ kind: 'exclusive', run, resolve: resolve as (v: unknown) => void, reject });
      this.kick();
    });
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
    const tree = this.commitTrees.get(commitId) ?? (await this.commitFacts(commitId)).tree;
    const recordOid = await this.lookup(tree, LAYOUT.recordPath(path));
    if (!recordOid) return null;
    const record = parseRecord(await this.readBlobText(recordOid), `${this.orgId}@${commitId}:${path}`);
    const blobOid = await this.lookup(tree, record.deletedAt ? LAYOUT.trashPath(path) : path);
    return blobOid ? { record, blobOid } : null;
  }

  private async lookup(tree: string, path: string): Promise<string | undefined> {
    let oid = tree;
    for (const part of path.split('/')) {
      const entry: TreeEntry | undefined = (await this.trees.entries(oid)).find((e) => e.path === part);
      if (!entry) return undefined;
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
      this.queue.push({ kind: 'txn', txn, resolve, reject });
      this.kick();
    });
  }

  /** Refuses new writes and waits for the queued ones to finish. */
  async close(): Promise<void> {
    this.closed = true;
    await this.drained;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const first = this.queue[0] as Pending;
        if (first.kind === 'exclusive') {
          this.queue.shift();
          await first.run().then(first.resolve, first.reject);
          continue;
        }
        const stop = this.queue.findIndex((p) => p.kind === 'exclusive');
        const batch = this.queue.splice(0, Math.min(stop === -1 ? this.queue.length : stop, MAX_BATCH)) as PendingTxn[];
        await this.runBatch(batch);
        if (this.autoRepackObjects > 0 && this.looseObjects >= this.autoRepackObjects) {
          await this.repackNow().catch((err: unknown) => this.logger.warn('automatic repack failed', { org: this.orgId, error: String(err) }));
        }
      }
    } finally {
      // In the same step as the loop's last look at an empty queue, with no await between:
      // a write queued from here on finds the flag down and starts a new drain.
      this.draining = false;
    }
  }

  private async runBatch(batch: PendingTxn[]): Promise<void> {
    const overlay = new IndexOverlay(this.index);
    const view: RepoView = {
      get: (path) => overlay.get(path),
      hasEntriesUnder: (folder) => overlay.hasEntriesUnder(folder),
      folderRule: (folder) => overlay.folderRule(folder),
      contentMatches: (entry, content) => hashBlob(Buffer.from(content, 'utf8')) === entry.blobOid,
    };
    const stager = new ObjectStager();
    const written = new Map<string, string>();
    let head = this.head;
    let root = this.rootTree;
    const outcomes: Array<{ pending: PendingTxn; result?: WriteResult; error?: unknown }> = [];
    const published: HistoryEntry[] = [];
    for (const pending of batch) {
      try {
        const intent = await pending.txn(view);
        if (!intent) {
          outcomes.push({ pending, result: { commitId: null, entry: null } });
          continue;
        }
        const built = await buildCommit({ intent, overlay, head, root, stager, written, trees: this.trees });
        published.push(built.history);
        head = built.commitId;
        root = built.root;
        if (intent.mutation === 'folderRule') overlay.setFolderRule(intent.folder, intent.rule);
        else overlay.set(intent.path, built.entry);
        outcomes.push({ pending, result: { commitId: built.commitId, entry: built.entry } });
      } catch (error) {
        outcomes.push({ pending, error });
      }
    }
    if (head !== this.head && head !== null) {
      try {
        this.looseObjects += await stager.flush(this.fs, this.gitdir);
        await compareAndSwapRef({ fs: this.fs, gitdir: this.gitdir, expected: this.head, next: head });
      } catch (error) {
        this.logger.error('commit failed; nothing was published', { org: this.orgId, error: String(error) });
        // Re-read the branch before answering, so a caller that retries at once sees what is really there.
        await this.load().catch((err: unknown) => this.logger.error('reload failed', { org: this.orgId, error: String(err) }));
        // Nobody in this batch may see success: later transactions decided on state that is not durable.
        for (const o of outcomes) o.pending.reject(o.error === undefined ? error : o.error);
        return;
      }
      overlay.applyTo(this.index);
      this.head = head;
      this.rootTree = root;
      for (const [oid, text] of written) this.contentCache.set(oid, text);
      await this.history.append(published);
    }
    for (const o of outcomes) {
      if (o.result) o.pending.resolve(o.result);
      else o.pending.reject(o.error);
    }
  }

  /**
   * Builds the index from the head commit's tree: one walk of the trees and one
   * read per sidecar record. History is never replayed. Items whose record and
   * content disagree are left out and reported (`knowledge-store verify` names them).
   */
  private async load(): Promise<void> {
    const head = await readRef(this.fs, this.gitdir);
    const index = new ItemIndex();
    let rootTree: string | null = null;
    if (head) {
      rootTree = (await this.commitFacts(head)).tree;
      const files = await listTreeFiles({ tree: rootTree, readTree: (oid) => this.trees.entries(oid) });
      const prefix = `${LAYOUT.itemsRoot}/`;
      const recordPaths = [...files.keys()].filter((p) => p.startsWith(prefix));
      await mapLimit(recordPaths, 32, async (recordPath) => {
        const recordOid = files.get(recordPath) as string;
        const record = parseRecord(await this.readBlobText(recordOid), `${this.orgId}:${recordPath}`);
        const path = recordPath.slice(prefix.length);
        const contentPath = record.deletedAt ? LAYOUT.trashPath(path) : path;
        const blobOid = files.get(contentPath);
        if (record.path !== path || !blobOid) {
          this.logger.warn('item record and tree disagree; item left out', { org: this.orgId, path });
          return;
        }
        index.set(path, { record, blobOid, recordOid });
      });
      const rulePrefix = `${LAYOUT.foldersRoot}/`;
      for (const [file, oid] of files) {
        if (!file.startsWith(rulePrefix) || !file.endsWith('/.rule.json')) continue;
        const rule = parseFolderRule(await this.readBlobText(oid), `${this.orgId}:${file}`);
        index.setFolderRule(file.slice(rulePrefix.length, -'/.rule.json'.length), rule);
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
  }
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
