import type { Logger } from '../../common/log.js';
import { secondsSince, type Metrics } from '../../common/metrics.js';
import type { FsPromises } from '../fs/fs.js';
import { blobObject } from '../git/objectFormat.js';
import { ObjectStager } from '../git/objectStager.js';
import { prepareRefSwap } from '../git/refs.js';
import type { TreeEditor } from '../git/treeEditor.js';
import { applyToOverlay, buildCommit, entryAfter, type ItemIntent, type WriteIntent } from './commitBuilder.js';
import type { DerivedView, DerivedViews, PublishedBatch, StagedView } from './derivedViews.js';
import type { HistoryEntry } from './historyLog.js';
import { IndexOverlay, type IndexEntry, type IndexView, type ItemIndex } from './itemIndex.js';

/** The view a transaction decides on: committed state plus earlier commits of the same batch. */
export interface RepoView extends IndexView {
  /** True when `content` is byte for byte the entry's stored content (compared by blob id, no read). */
  contentMatches(entry: IndexEntry, content: string): boolean;
  /**
   * A layer over this view in which a transaction plans several item changes in turn (`POST /commits`):
   * each one `apply`ed is seen by the next decision; nothing is written, and this view is left as it was.
   */
  scratch(): ScratchView;
}

export interface ScratchView extends RepoView {
  /** Makes the intent's effect visible in this layer; returns the item's entry after it. */
  apply(intent: ItemIntent): IndexEntry | null;
}

function viewOf(overlay: IndexOverlay): RepoView {
  return {
    get: (path) => overlay.get(path),
    hasEntriesUnder: (folder) => overlay.hasEntriesUnder(folder),
    folderRule: (folder) => overlay.folderRule(folder),
    contentMatches: (entry, content) => blobObject(Buffer.from(content, 'utf8')).oid === entry.blobOid,
    scratch: () => scratchOf(new IndexOverlay(overlay)),
  };
}

function scratchOf(layer: IndexOverlay): ScratchView {
  return {
    ...viewOf(layer),
    apply: (intent) => {
      const entry = entryAfter(intent, layer);
      applyToOverlay(layer, intent, entry);
      return entry;
    },
  };
}

/** Decides, against the current state, what to write; throws a domain error to refuse; null to write nothing. */
export type Transaction = (view: RepoView) => WriteIntent | null | Promise<WriteIntent | null>;

export interface WriteResult {
  commitId: string | null;
  /** The item as written (null for a purge, a folder rule, a commit of several items, or no commit). */
  entry: IndexEntry | null;
  /** Per item intent of a commit of several, in order: the item as written (null for a purge). */
  entries?: Array<IndexEntry | null>;
}

/** What readers see: the last published state of the branch. */
export interface CommittedState {
  index: ItemIndex;
  head: string | null;
  rootTree: string | null;
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
  commits: HistoryEntry[];
  /** The branch before and after the batch. */
  parent: string | null;
  head: string | null;
  root: string | null;
}

/** Most commits written, flushed and published together by one group commit. */
const MAX_BATCH = 256;

/**
 * The write path of one repository. Transactions run one after another
 * against the in-memory index; each accepted one becomes its own commit.
 * Everything a queue turn produced is flushed with one round of fsyncs and
 * published with one compare-and-swap of `refs/heads/main` (group commit);
 * then the committed state advances, the derived views are told, and only
 * then are the callers answered. Reads never wait for writes.
 */
export class WritePipeline {
  private queue: PendingTxn[] = [];
  /** True while `drain` runs; cleared in the same step as its last look at the queue (no lost wake-ups). */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly deps: {
      orgId: string;
      fs: FsPromises;
      gitdir: string;
      logger: Logger;
      /** Told each published group commit's size and fsync time. */
      metrics: Metrics;
      trees: TreeEditor;
      views: DerivedViews;
      /** The state readers see now. */
      committed(): CommittedState;
      /** Makes a published batch the state readers see (before any view is told). */
      advance(batch: { overlay: IndexOverlay; head: string; root: string }): void;
      /** Re-reads the branch from disk after a failed publish. */
      reload(): Promise<void>;
      /** Runs after the callers of a batch were answered (snapshots, repacks): never delays an answer. */
      afterAnswer(batch: PublishedBatch | null): Promise<void>;
    },
  ) {}

  /** Queues a transaction; resolves once its commit (if any) is durable and published. */
  write(txn: Transaction): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new Error(`repository ${this.deps.orgId} is closed`));
    return new Promise<WriteResult>((resolve, reject) => {
      this.queue.push({ txn, resolve, reject });
      if (this.draining) return;
      this.draining = true;
      this.drained = this.drain();
    });
  }

  /** Writes waiting for a queue turn (GET /metrics: queue depth). */
  get queued(): number {
    return this.queue.length;
  }

  /** Refuses new writes and waits for the queued ones. */
  async close(): Promise<void> {
    this.closed = true;
    await this.drained;
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
        built.overlay.rebase(this.deps.committed().index);
        publishing = this.publish(built);
        previous = built;
      }
    } finally {
      // In the same step as the loop's last look at an empty queue, with no await between:
      // a write queued from here on finds the flag down and starts a new drain.
      this.draining = false;
    }
  }

  /** Runs each transaction against the state after `previous` (or the committed state) and stages its commit. */
  private async buildBatch(batch: PendingTxn[], previous: BuiltBatch | null): Promise<BuiltBatch> {
    const committed = this.deps.committed();
    const overlay = new IndexOverlay(previous?.overlay ?? committed.index);
    const view = viewOf(overlay);
    const parent = previous ? previous.head : committed.head;
    const root = previous ? previous.root : committed.rootTree;
    const built: BuiltBatch = { outcomes: [], overlay, stager: new ObjectStager(), written: new Map(), commits: [], parent, head: parent, root };
    for (const pending of batch) {
      try {
        const intent = await pending.txn(view);
        if (!intent) {
          built.outcomes.push({ pending, result: { commitId: null, entry: null } });
          continue;
        }
        const commit = await buildCommit({ intent, overlay, head: built.head, root: built.root, stager: built.stager, written: built.written, trees: this.deps.trees });
        built.commits.push(commit.history);
        built.head = commit.commitId;
        built.root = commit.root;
        if (intent.mutation === 'folderRule') overlay.setFolderRule(intent.folder, intent.rule);
        else if (intent.mutation === 'commit') intent.items.forEach((item, i) => applyToOverlay(overlay, item, commit.entries[i] ?? null));
        else applyToOverlay(overlay, intent, commit.entry);
        built.outcomes.push({ pending, result: { commitId: commit.commitId, entry: commit.entry, entries: commit.entries } });
      } catch (error) {
        built.outcomes.push({ pending, error });
      }
    }
    built.stager.seal();
    return built;
  }

  /**
   * Makes a built batch durable (one pack, one compare-and-swap of main), then
   * advances the committed state, tells the views and answers the callers.
   * Resolves false when nothing could be published; the repository is re-read
   * from disk then.
   */
  private async publish(built: BuiltBatch): Promise<boolean> {
    const { outcomes } = built;
    const { orgId, fs, gitdir, logger } = this.deps;
    let published: PublishedBatch | null = null;
    if (built.head !== built.parent && built.head !== null && built.root !== null) {
      const { head, root } = built;
      let syncStarted: bigint | undefined;
      let fsyncSeconds: number;
      let flushed: PublishedBatch['flushed'];
      let staged: Map<DerivedView, StagedView> = new Map();
      try {
        // The views stage their work while the pack is fsynced (the event loop is idle then),
        // and make it visible only once the branch has moved (notify), or forget it.
        let diskBusy: (busy: boolean) => void = () => undefined;
        const busy = new Promise<boolean>((resolve) => (diskBusy = resolve));
        const flushing = built.stager.flush(fs, gitdir, {
          whileSyncing: () => {
            syncStarted = process.hrtime.bigint();
            diskBusy(true);
          },
        });
        const staging = this.deps.views.stage({ parent: built.parent, head, root, commits: built.commits, written: built.written, state: built.overlay, diskBusy: busy });
        // The ref's new value is written and fsynced in its lock file beside the pack's fsync; the
        // ref moves only once the pack is durable (see prepareRefSwap).
        const swapping = prepareRefSwap({ fs, gitdir, expected: built.parent, next: head });
        try {
          const [flush, swap] = await Promise.allSettled([flushing, swapping]);
          if (flush.status === 'rejected' || swap.status === 'rejected') {
            if (swap.status === 'fulfilled') await swap.value.abort();
            throw flush.status === 'rejected' ? flush.reason : (swap as PromiseRejectedResult).reason;
          }
          flushed = flush.value;
          fsyncSeconds = syncStarted === undefined ? 0 : secondsSince(syncStarted);
          await swap.value.publish();
        } finally {
          // A flush that failed before its fsync never said the disk was busy: nothing is to be staged then.
          diskBusy(false);
          staged = await staging;
        }
      } catch (error) {
        this.deps.views.rollback(staged);
        logger.error('commit failed; nothing was published', { org: orgId, error: String(error) });
        // Re-read the branch before answering, so a caller that retries at once sees what is really there.
        await this.deps.reload().catch((err: unknown) => logger.error('reload failed', { org: orgId, error: String(err) }));
        // Nobody in this batch may see success: later transactions decided on state that is not durable.
        for (const o of outcomes) o.pending.reject(o.error === undefined ? error : o.error);
        return false;
      }
      this.deps.metrics.groupCommit({ commits: built.commits.length, fsyncSeconds });
      this.deps.advance({ overlay: built.overlay, head, root });
      published = { parent: built.parent, head, root, commits: built.commits, written: built.written, flushed };
      await this.deps.views.notify(published, staged);
    }
    for (const o of outcomes) {
      if (o.result) o.pending.resolve(o.result);
      else o.pending.reject(o.error);
    }
    await this.deps.afterAnswer(published);
    return true;
  }
}
