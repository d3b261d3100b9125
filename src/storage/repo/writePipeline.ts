import { blobObject } from '../git/objectFormat.js';
import { ObjectStager } from '../git/objectStager.js';
import type { TreeEditor } from '../git/treeEditor.js';
import { applyToOverlay, buildCommit, entryAfter, type ItemIntent, type WriteIntent } from './commitBuilder.js';
import { commitBatch, type BuiltBatch, type Flight, type GroupCommitDeps, type Waiter, type WriteResult } from './groupCommit.js';
import { IndexOverlay, type IndexEntry, type IndexView, type ItemIndex } from './itemIndex.js';

export type { WriteResult } from './groupCommit.js';

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

/** What readers see: the last published state of the branch. */
export interface CommittedState {
  index: ItemIndex;
  head: string | null;
  rootTree: string | null;
}

/** A queued transaction and the caller waiting for it. */
interface PendingTxn extends Waiter {
  txn: Transaction;
}

/** Most commits written, flushed and published together by one group commit. */
const MAX_BATCH = 256;

/**
 * Most batches on their way at once: one moving the ref while the next makes its pack durable. A
 * small batch costs more CPU per commit than a large one (its own pack, fsyncs and file calls, and
 * fewer trees written as deltas), and the pipeline shortens a commit's wait, so its writers come
 * back sooner and fewer are queued when the next batch is cut: measured under load, three in flight
 * made ~4-5 commits per batch against ~8 before the pipeline, and two ~5, both slower. So while a
 * batch is in flight, the next one also waits until as many writes are queued as the last batch
 * done answered (those writers are on their way back), or until nothing is in flight: ~7.5 per batch.
 */
const MAX_IN_FLIGHT = 2;

/**
 * The write path of one repository. Transactions run one after another
 * against the in-memory index; each accepted one becomes its own commit.
 * Everything a queue turn produced is flushed as one pack and published with
 * one compare-and-swap of `refs/heads/main` (group commit); then the committed
 * state advances, the derived views are told, and only then are the callers
 * answered. Batches are pipelined (see groupCommit.ts): while one batch's ref
 * moves, the next ones are built on top of it and their packs made durable.
 * Reads never wait for writes.
 */
export class WritePipeline {
  private queue: PendingTxn[] = [];
  /** True while `drain` runs; cleared in the same step as its last look at the queue (no lost wake-ups). */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  private closed = false;
  /** Wakes `drain` while it waits for a batch in flight: a write queued meanwhile may start the next batch. */
  private wake: () => void = () => undefined;
  /** Writes the last batch done answered: their writers may be on their way back (see `MAX_IN_FLIGHT`). */
  private answered = 0;

  constructor(
    private readonly deps: GroupCommitDeps & {
      trees: TreeEditor;
      /** The state readers see now. */
      committed(): CommittedState;
    },
  ) {}

  /** Queues a transaction; resolves once its commit (if any) is durable and published. */
  write(txn: Transaction): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new Error(`repository ${this.deps.orgId} is closed`));
    return new Promise<WriteResult>((resolve, reject) => {
      this.queue.push({ txn, resolve, reject });
      if (this.draining) return this.wake();
      this.draining = true;
      this.drained = this.drain();
    });
  }

  /** Writes waiting for a queue turn (GET /metrics: queue depth). */
  get queued(): number {
    return this.queue.length;
  }

  /** No write queued or in flight. */
  get idle(): boolean {
    return !this.draining && this.queue.length === 0;
  }

  /** Refuses new writes and waits for the queued ones. */
  async close(): Promise<void> {
    this.closed = true;
    await this.drained;
  }

  /**
   * Runs the queue as a pipeline: each batch is built on the one before it (published or not) and
   * sent on its way; it is published only after the one before it, and if that one failed, it
   * (which decided on that state) fails too, unpublished. A batch built once a failure is known
   * starts from the state re-read from disk.
   */
  private async drain(): Promise<void> {
    const inFlight = new Set<Promise<boolean>>();
    let tail: Flight | null = null;
    try {
      while (this.queue.length > 0 || inFlight.size > 0) {
        const gathered = inFlight.size === 0 || this.queue.length >= this.answered;
        if (this.queue.length === 0 || inFlight.size >= MAX_IN_FLIGHT || !gathered) {
          // Woken by a write queued or a batch done.
          await Promise.race<unknown>([...inFlight, new Promise<void>((resolve) => (this.wake = resolve))]);
          continue;
        }
        if (tail?.failed) tail = null;
        const batch = this.queue.splice(0, MAX_BATCH);
        const previous: Flight | null = tail;
        const flight: Flight = { built: await this.buildBatch(batch, previous), done: Promise.resolve(true), published: false, failed: false, successor: null };
        flight.done = commitBatch(this.deps, flight, previous);
        const done = flight.done;
        inFlight.add(done);
        void done.finally(() => {
          inFlight.delete(done);
          this.answered = batch.length;
        });
        tail = flight;
      }
    } finally {
      // In the same step as the loop's last look at an empty queue, with no await between:
      // a write queued from here on finds the flag down and starts a new drain.
      this.draining = false;
    }
  }

  /** Runs each transaction against the state after `previous` (or the committed state) and stages its commit. */
  private async buildBatch(batch: PendingTxn[], previous: Flight | null): Promise<BuiltBatch> {
    const committed = this.deps.committed();
    const onPrevious = previous !== null && !previous.published;
    const overlay = new IndexOverlay(onPrevious ? previous.built.overlay : committed.index);
    // Until `previous` is in the index, this batch reads through its overlay (see commitBatch).
    if (onPrevious) previous.successor = overlay;
    const view = viewOf(overlay);
    const parent = previous ? previous.built.head : committed.head;
    const root = previous ? previous.built.root : committed.rootTree;
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
}
