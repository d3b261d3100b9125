import type { Logger } from '../../common/log.js';
import type { HistoryEntry } from './historyLog.js';

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
  /** Objects and packs the batch added to the repository. */
  flushed: { objects: number; packs: number };
}

/**
 * Something kept beside the repository and derived from it (the history log,
 * the index snapshot's cadence, the repack schedule; next a search index or an
 * event stream). The write pipeline tells each one, in order, what every batch
 * published, after the branch moved and before the writers are answered, so a
 * 200 is visible in every view by the next request. A view is a cache of the
 * branch: one that fails is logged and catches up from git at the next start;
 * the commit stands.
 */
export interface DerivedView {
  readonly name: string;
  published(batch: PublishedBatch): void | Promise<void>;
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

  async notify(batch: PublishedBatch): Promise<void> {
    for (const view of this.views) {
      try {
        await view.published(batch);
      } catch (err) {
        this.logger.error('a derived view could not follow a commit', { org: this.orgId, view: view.name, error: String(err) });
      }
    }
  }
}
