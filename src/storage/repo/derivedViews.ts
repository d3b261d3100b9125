import type { Logger } from '../../common/log.js';
import type { FlushReport } from '../git/objectStager.js';
import type { HistoryEntry } from './historyLog.js';
import type { IndexView } from './itemIndex.js';

/** What one group commit published: main moved from `parent` to `head` through `commits`. */
export interface PublishedBatch {
  parent: string | null;
  head: string;
  /** The head commit's root tree. */
  root: string;
  /** The new commits, oldest first. */
  commits: readonly HistoryEntry[];
  /** Contents written by the batch, by blob id (what a reader would otherwise read back from git). */
  written: ReadonlyMap<string, string>;
  /** Objects and packs the batch added to the repository, and its trees' folders. */
  flushed: FlushReport;
}

/** A batch about to be published: its commits are built, its objects are being made durable. */
export interface StagingBatch extends Omit<PublishedBatch, 'flushed'> {
  /** The repository as it will be once the batch is published (the committed state is still the one before). */
  state: IndexView;
  /**
   * Resolves true once the fsync of the batch's ref update is under way (the event loop is free while
   * the disk works; the batch before has committed its staged work), false when the write failed before
   * it: the view should then stage nothing.
   */
  diskBusy: Promise<boolean>;
}

/** A view's work for a batch, done and held open until the batch is published (or not). */
export interface StagedView {
  /** The branch moved: make the staged work visible. */
  commit(): void;
  /** The write failed: forget the staged work. */
  rollback(): void;
}

/**
 * Something kept beside the repository and derived from it (the history log,
 * the index snapshot's cadence, the repack schedule; next a search index or an
 * event stream). The write pipeline tells each one, in order, what every batch
 * published, after the branch moved and before the writers are answered, so a
 * 200 is visible in every view by the next request. A view is a cache of the
 * branch: one that fails is logged and catches up from git at the next start;
 * the commit stands.
 *
 * A view whose work is costly may also `stage` it while the batch's ref update
 * is fsynced (its objects are durable before), holding it invisible until `commit` (after the branch moved,
 * still before the writers are answered) or `rollback`: with one writer the
 * write then costs what the disk costs, not the disk plus the view.
 */
export interface DerivedView {
  readonly name: string;
  published(batch: PublishedBatch): void | Promise<void>;
  /** Null when the view stages nothing for this batch: it is told through `published` instead. */
  stage?(batch: StagingBatch): Promise<StagedView | null>;
}

/** The views of one repository, told in the order they were added. */
export class DerivedViews {
  private readonly views: DerivedView[] = [];

  constructor(
    private readonly orgId: string,
    private readonly logger: Logger,
  ) {}

  add(view: DerivedView): void {
    this.views.push(view);
  }

  /** Lets every view that can stage its work for `batch`; never rejects (a view that fails follows in `notify`). */
  async stage(batch: StagingBatch): Promise<Map<DerivedView, StagedView>> {
    const staged = new Map<DerivedView, StagedView>();
    for (const view of this.views) {
      if (!view.stage) continue;
      try {
        const work = await view.stage(batch);
        if (work) staged.set(view, work);
      } catch (err) {
        this.logger.error('a derived view could not stage a commit', { org: this.orgId, view: view.name, error: String(err) });
      }
    }
    return staged;
  }

  /**
   * The batch is published: first every staged piece of work is committed (synchronous, so the views
   * that hold queries back let them go at once), then the other views follow the batch, in order.
   */
  async notify(batch: PublishedBatch, staged: ReadonlyMap<DerivedView, StagedView> = new Map()): Promise<void> {
    for (const [view, work] of staged) {
      try {
        work.commit();
      } catch (err) {
        this.logger.error('a derived view could not follow a commit', { org: this.orgId, view: view.name, error: String(err) });
      }
    }
    for (const view of this.views) {
      if (staged.has(view)) continue;
      try {
        await view.published(batch);
      } catch (err) {
        this.logger.error('a derived view could not follow a commit', { org: this.orgId, view: view.name, error: String(err) });
      }
    }
  }

  /** The batch was not published: every staged piece of work is forgotten. */
  rollback(staged: ReadonlyMap<DerivedView, StagedView>): void {
    for (const [view, work] of staged) {
      try {
        work.rollback();
      } catch (err) {
        this.logger.error('a derived view could not roll back a staged commit', { org: this.orgId, view: view.name, error: String(err) });
      }
    }
  }
}
