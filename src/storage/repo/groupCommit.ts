import type { Logger } from '../../common/log.js';
import { secondsSince, type Metrics } from '../../common/metrics.js';
import type { FsPromises } from '../fs/fs.js';
import type { FlushReport, ObjectStager } from '../git/objectStager.js';
import { stageRefUpdate, type StagedRefUpdate } from '../git/refs.js';
import type { DerivedView, DerivedViews, PublishedBatch, StagedView } from './derivedViews.js';
import type { HistoryEntry } from './historyLog.js';
import type { IndexEntry, IndexLayer, IndexOverlay } from './itemIndex.js';

export interface WriteResult {
  commitId: string | null;
  /** The item as written (null for a purge, a folder rule, a commit of several items, or no commit). */
  entry: IndexEntry | null;
  /** Per item intent of a commit of several, in order: the item as written (null for a purge). */
  entries?: Array<IndexEntry | null>;
}

/** A queued write's caller, answered once its batch is published (or not). */
export interface Waiter {
  resolve: (result: WriteResult) => void;
  reject: (err: unknown) => void;
}

/** A batch whose commits are built (staged in memory) and not yet published. */
export interface BuiltBatch {
  outcomes: Array<{ pending: Waiter; result?: WriteResult; error?: unknown }>;
  overlay: IndexOverlay;
  stager: ObjectStager;
  written: Map<string, string>;
  commits: HistoryEntry[];
  /** The branch before and after the batch. */
  parent: string | null;
  head: string | null;
  root: string | null;
}

/**
 * A batch on its way through the pipeline. `done` resolves true once it is published and its
 * callers answered, false once it failed (and the committed state was re-read): it never rejects.
 */
export interface Flight {
  built: BuiltBatch;
  done: Promise<boolean>;
  /** Set, before `done` resolves, once the batch is published. */
  published: boolean;
  /** Set, before `done` resolves, once the batch failed: a batch built after that starts from the re-read state. */
  failed: boolean;
  /** The overlay of the batch built on this one, read through it until this one is in the index. */
  successor: IndexOverlay | null;
}

export interface GroupCommitDeps {
  orgId: string;
  fs: FsPromises;
  gitdir: string;
  logger: Logger;
  /** Told each published group commit's size and fsync time. */
  metrics: Metrics;
  views: DerivedViews;
  /** Makes a published batch the state readers see (before any view is told); returns the index it went into. */
  advance(batch: { overlay: IndexOverlay; head: string; root: string }): IndexLayer;
  /** Re-reads the branch from disk after a failed publish. */
  reload(): Promise<void>;
  /** Runs after the callers of a batch were answered (snapshots, repacks): never delays an answer. */
  afterAnswer(batch: PublishedBatch | null): Promise<void>;
}

const EARLIER_FAILED = 'an earlier commit of the same group failed; nothing was published';

/** What the first stage left durable: the batch's pack, and the ref's next value beside the ref. */
interface Durable {
  flushed: FlushReport;
  fsyncSeconds: number;
  ref: StagedRefUpdate;
}

/**
 * One batch's group commit, in two stages. The first needs nothing of the batch before: the pack
 * and its index are written, fsynced and renamed into place (their directory fsynced), and the
 * ref's next value is written and fsynced beside them (`stageRefUpdate`): unreferenced objects,
 * which a crash leaves as garbage, never as a branch naming what is missing. The second waits for
 * the batch before to be published (its ref moved, its views told, its callers answered): then the
 * ref is swapped (one fsync, its directory's) while the views stage their work, the committed state
 * advances, the views commit and the callers are answered. If the batch before failed, this one
 * (which decided on its state) fails too, before touching the ref or any view.
 */
export async function commitBatch(deps: GroupCommitDeps, flight: Flight, previous: Flight | null): Promise<boolean> {
  const { built } = flight;
  const commits = built.head !== built.parent && built.head !== null && built.root !== null;
  let durable: Durable | null = null;
  let failure: { error: unknown } | null = null;
  if (commits) {
    try {
      durable = await makeDurable(deps, built);
    } catch (error) {
      failure = { error };
    }
  }
  if (previous && !(await previous.done)) {
    await durable?.ref.discard();
    return fail(flight, EARLIER_FAILED);
  }
  if (failure) return failAndReload(deps, flight, failure.error);
  let published: PublishedBatch | null = null;
  if (durable) {
    const staged = await swapRef(deps, built, durable);
    if (!staged.ok) return failAndReload(deps, flight, staged.error);
    const { head, root } = built as BuiltBatch & { head: string; root: string };
    deps.metrics.groupCommit({ commits: built.commits.length, fsyncSeconds: durable.fsyncSeconds });
    const index = deps.advance({ overlay: built.overlay, head, root });
    // This batch is in the index now: the batch built on it reads through the index directly.
    flight.successor?.rebase(index);
    published = { parent: built.parent, head, root, commits: built.commits, written: built.written, flushed: durable.flushed };
    await deps.views.notify(published, staged.views);
  }
  flight.published = true;
  for (const o of built.outcomes) {
    if (o.result) o.pending.resolve(o.result);
    else o.pending.reject(o.error);
  }
  // The batches after this one wait for `done`: a failure here (a snapshot, a repack) must not hold them up.
  await deps.afterAnswer(published).catch((err: unknown) => deps.logger.error('after a group commit', { org: deps.orgId, error: String(err) }));
  return true;
}

/** The first stage: the pack durable in objects/pack and the ref's next value durable beside the ref, side by side. */
async function makeDurable(deps: GroupCommitDeps, built: BuiltBatch): Promise<Durable> {
  const { fs, gitdir } = deps;
  let syncStarted: bigint | undefined;
  const flushing = built.stager.flush(fs, gitdir, { whileSyncing: () => (syncStarted = process.hrtime.bigint()) });
  const staging = stageRefUpdate({ fs, gitdir, expected: built.parent, next: built.head as string });
  const [flush, ref] = await Promise.allSettled([flushing, staging]);
  if (flush.status === 'rejected' || ref.status === 'rejected') {
    if (ref.status === 'fulfilled') await ref.value.discard();
    throw flush.status === 'rejected' ? flush.reason : (ref as PromiseRejectedResult).reason;
  }
  return { flushed: flush.value, fsyncSeconds: syncStarted === undefined ? 0 : secondsSince(syncStarted), ref: ref.value };
}

/**
 * The second stage's disk part: the ref swapped, while the views stage their work (they begin
 * their costly part once the directory's fsync is under way, the event loop free) and hold it
 * invisible until `notify`, or forget it on failure.
 */
async function swapRef(
  deps: GroupCommitDeps,
  built: BuiltBatch,
  durable: Durable,
): Promise<{ ok: true; views: Map<DerivedView, StagedView> } | { ok: false; error: unknown }> {
  let diskBusy: (busy: boolean) => void = () => undefined;
  const busy = new Promise<boolean>((resolve) => (diskBusy = resolve));
  const staging = deps.views.stage({
    parent: built.parent,
    head: built.head as string,
    root: built.root as string,
    commits: built.commits,
    written: built.written,
    state: built.overlay,
    diskBusy: busy,
  });
  try {
    await durable.ref.swap({ whileSyncing: () => diskBusy(true) });
  } catch (error) {
    diskBusy(false);
    deps.views.rollback(await staging);
    return { ok: false, error };
  }
  // A swap whose fsync could not be (memfs) never said the disk was busy: the views follow in `notify`.
  diskBusy(false);
  return { ok: true, views: await staging };
}

/** Fails every caller of the batch (a transaction's own error first), the state untouched. */
function fail(flight: Flight, error: unknown): false {
  flight.failed = true;
  for (const o of flight.built.outcomes) o.pending.reject(o.error === undefined ? (typeof error === 'string' ? new Error(error) : error) : o.error);
  return false;
}

/**
 * A batch that could not be published: the branch is re-read before the callers are answered, so
 * a caller that retries at once sees what is really there. Nobody in the batch may see success:
 * later transactions decided on state that is not durable.
 */
async function failAndReload(deps: GroupCommitDeps, flight: Flight, error: unknown): Promise<false> {
  const { logger, orgId } = deps;
  logger.error('commit failed; nothing was published', { org: orgId, error: String(error) });
  await deps.reload().catch((err: unknown) => logger.error('reload failed', { org: orgId, error: String(err) }));
  return fail(flight, error);
}
