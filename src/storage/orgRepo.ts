import { createHash } from 'node:crypto';
import git from 'isomorphic-git';
import type { Logger } from '../log.js';
import { formatCommitMessage, type ItemAction } from './commitMessage.js';
import { mapLimit } from './durable.js';
import type { FsPromises } from './fs.js';
import { IndexOverlay, ItemIndex, type IndexEntry, type IndexView } from './itemIndex.js';
import { LAYOUT, parseRecord, serializeRecord, type ItemRecord } from './itemRecord.js';
import { Lru } from './lru.js';
import { ObjectStager } from './objectStager.js';
import { compareAndSwapRef, readRef } from './refs.js';
import { TreeEditor, type TreeChange } from './treeEditor.js';
import { listTreeFiles, treeReader } from './treeWalk.js';

/**
 * What a transaction asks for: one state change of one item, which becomes
 * exactly one commit. `put` writes content and record; `trash` moves the
 * content under `.trash/`; `restore` moves it back; `purge` removes both.
 */
export interface WriteIntent {
  mutation: 'put' | 'trash' | 'restore' | 'purge';
  path: string;
  record: ItemRecord;
  /** New content, for `put`. */
  content?: string;
  action: ItemAction;
  /** The commit message before the trailers. */
  summary: string;
  author: { name: string; email: string };
  when: Date;
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
  entry: IndexEntry | null;
}

interface Pending {
  txn: Transaction;
  resolve: (result: WriteResult) => void;
  reject: (err: unknown) => void;
}

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
  /** isomorphic-git's own cache (pack indexes): one per repository, for its lifetime. */
  private readonly gitCache = {};
  private readonly gitFs: { promises: FsPromises };
  private readonly trees: TreeEditor;
  private queue: Pending[] = [];
  private draining: Promise<void> | null = null;
  private closed = false;
  private head: string | null = null;
  private rootTree: string | null = null;

  private constructor(
    readonly orgId: string,
    private readonly fs: FsPromises,
    readonly gitdir: string,
    private readonly logger: Logger,
  ) {
    this.gitFs = { promises: fs };
    this.trees = new TreeEditor(treeReader(fs, gitdir, this.gitCache));
  }

  static async open(args: { orgId: string; fs: FsPromises; gitdir: string; logger: Logger }): Promise<OrgRepo> {
    const repo = new OrgRepo(args.orgId, args.fs, args.gitdir, args.logger);
    await repo.load();
    return repo;
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

  async readContent(entry: IndexEntry): Promise<string> {
    const cached = this.contentCache.get(entry.blobOid);
    if (cached !== undefined) return cached;
    const { blob } = await git.readBlob({ fs: this.gitFs, gitdir: this.gitdir, oid: entry.blobOid, cache: this.gitCache });
    const text = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).toString('utf8');
    this.contentCache.set(entry.blobOid, text);
    return text;
  }

  /** Queues a transaction; resolves once its commit (if any) is durable and published. */
  write(txn: Transaction): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new Error(`repository ${this.orgId} is closed`));
    return new Promise<WriteResult>((resolve, reject) => {
      this.queue.push({ txn, resolve, reject });
      this.draining ??= this.drain().finally(() => {
        this.draining = null;
      });
    });
  }

  /** Refuses new writes and waits for the queued ones to finish. */
  async close(): Promise<void> {
    this.closed = true;
    await this.draining;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      await this.runBatch(batch);
    }
  }

  private async runBatch(batch: Pending[]): Promise<void> {
    const overlay = new IndexOverlay(this.index);
    const view: RepoView = {
      get: (path) => overlay.get(path),
      hasEntriesUnder: (folder) => overlay.hasEntriesUnder(folder),
      contentMatches: (entry, content) => hashBlob(Buffer.from(content, 'utf8')) === entry.blobOid,
    };
    const stager = new ObjectStager();
    const written = new Map<string, string>();
    let head = this.head;
    let root = this.rootTree;
    const outcomes: Array<{ pending: Pending; result?: WriteResult; error?: unknown }> = [];
    for (const pending of batch) {
      try {
        const intent = await pending.txn(view);
        if (!intent) {
          outcomes.push({ pending, result: { commitId: null, entry: null } });
          continue;
        }
        const built = await this.buildCommit({ intent, overlay, head, root, stager, written });
        head = built.commitId;
        root = built.root;
        overlay.set(intent.path, built.entry);
        outcomes.push({ pending, result: { commitId: built.commitId, entry: built.entry } });
      } catch (error) {
        outcomes.push({ pending, error });
      }
    }
    if (head !== this.head && head !== null) {
      try {
        await stager.flush(this.fs, this.gitdir);
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
    }
    for (const o of outcomes) {
      if (o.result) o.pending.resolve(o.result);
      else o.pending.reject(o.error);
    }
  }

  private async buildCommit(args: {
    intent: WriteIntent;
    overlay: IndexOverlay;
    head: string | null;
    root: string | null;
    stager: ObjectStager;
    written: Map<string, string>;
  }): Promise<{ commitId: string; root: string; entry: IndexEntry | null }> {
    const { intent, overlay, stager } = args;
    const { path, record } = intent;
    const current = overlay.get(path);
    const changes: TreeChange[] = [];
    let blobOid: string;
    switch (intent.mutation) {
      case 'put': {
        const content = intent.content ?? '';
        blobOid = await stager.writeBlob(Buffer.from(content, 'utf8'));
        args.written.set(blobOid, content);
        changes.push({ path, oid: blobOid });
        break;
      }
      case 'trash':
      case 'restore':
      case 'purge': {
        if (!current) throw new Error(`no entry at ${path} to ${intent.mutation}`);
        blobOid = current.blobOid;
        const live = { path, oid: intent.mutation === 'restore' ? blobOid : null };
        const trashed = { path: LAYOUT.trashPath(path), oid: intent.mutation === 'trash' ? blobOid : null };
        changes.push(live, trashed);
        break;
      }
    }
    let entry: IndexEntry | null = null;
    if (intent.mutation === 'purge') {
      changes.push({ path: LAYOUT.recordPath(path), oid: null });
    } else {
      const recordOid = await stager.writeBlob(Buffer.from(serializeRecord(record), 'utf8'));
      changes.push({ path: LAYOUT.recordPath(path), oid: recordOid });
      entry = { record, blobOid, recordOid };
    }
    const root = await this.trees.apply(args.root, changes, stager);
    const commitId = await stager.writeCommit({
      tree: root,
      parents: args.head ? [args.head] : [],
      author: { ...intent.author, timestamp: Math.floor(intent.when.getTime() / 1000) },
      message: formatCommitMessage(intent.summary, { itemId: record.id, itemPath: path, action: intent.action }),
    });
    return { commitId, root, entry };
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
      const { commit } = await git.readCommit({ fs: this.gitFs, gitdir: this.gitdir, oid: head, cache: this.gitCache });
      rootTree = commit.tree;
      const files = await listTreeFiles({ tree: rootTree, readTree: (oid) => this.trees.entries(oid) });
      const prefix = `${LAYOUT.itemsRoot}/`;
      const recordPaths = [...files.keys()].filter((p) => p.startsWith(prefix));
      await mapLimit(recordPaths, 32, async (recordPath) => {
        const recordOid = files.get(recordPath) as string;
        const { blob } = await git.readBlob({ fs: this.gitFs, gitdir: this.gitdir, oid: recordOid, cache: this.gitCache });
        const record = parseRecord(Buffer.from(blob).toString('utf8'), `${this.orgId}:${recordPath}`);
        const path = recordPath.slice(prefix.length);
        const contentPath = record.deletedAt ? LAYOUT.trashPath(path) : path;
        const blobOid = files.get(contentPath);
        if (record.path !== path || !blobOid) {
          this.logger.warn('item record and tree disagree; item left out', { org: this.orgId, path });
          return;
        }
        index.set(path, { record, blobOid, recordOid });
      });
    }
    // Swap in one step: a reload after a failed flush replaces everything at once.
    this.index = index;
    this.head = head;
    this.rootTree = rootTree;
  }
}
