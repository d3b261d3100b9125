import { createHash } from 'node:crypto';
import { errnoCode } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { Slots } from '../../common/slots.js';
import type { FsPromises } from '../fs/fs.js';
import type { GitCli, PushResult } from '../git/gitCli.js';
import type { DerivedView } from '../repo/derivedViews.js';
import type { OrgRepo } from '../repo/orgRepo.js';
import { MirrorWorker, type MirrorProgress } from './mirrorWorker.js';
import type { ReplicationSettings } from './remotes.js';

/** Where each mirror was last pushed to, beside the repository (git ignores it; a clone does not carry it). */
export const REPLICATION_FILE = 'knowledge-replication.json';

/** Publish times kept for the lag in seconds (the commits not yet on every mirror; older ones use the commit's own time). */
const PUBLISH_TIMES_KEPT = 100_000;

/** One mirror's status: its progress and how far behind the organization's main it is. */
export interface MirrorStatus extends MirrorProgress {
  /** Commits on main the mirror is not known to have (all of them until a first push succeeds). */
  lagCommits: number;
  /** Age of the oldest of them, in seconds (0 when caught up). */
  lagSeconds: number;
}

interface Remembered {
  commit: string;
  at: string;
}

/**
 * The mirrors of one organization. A derived view of the repository notes when each batch was published
 * and wakes the mirrors' workers; it does nothing else, so a slow or dead mirror never slows a write.
 */
export class OrgReplicator {
  private readonly workers: MirrorWorker[] = [];
  private readonly publishedAt = new Map<string, number>();
  private saving: Promise<void> = Promise.resolve();
  private remembered: Record<string, Remembered> = {};

  private constructor(
    private readonly repo: OrgRepo,
    private readonly deps: { fs: FsPromises; git: GitCli; settings: ReplicationSettings; slots: Slots; logger: Logger; pushed(outcome: PushResult['outcome'], seconds: number): void },
  ) {}

  static async start(repo: OrgRepo, urls: readonly string[], deps: OrgReplicator['deps']): Promise<OrgReplicator> {
    const replicator = new OrgReplicator(repo, deps);
    replicator.remembered = await replicator.load();
    const view: DerivedView = {
      name: 'replication',
      published: (batch) => {
        const now = Date.now();
        for (const c of batch.commits) replicator.publishedAt.set(c.commitId, now);
        replicator.forgetOldTimes();
        for (const w of replicator.workers) w.wake();
      },
    };
    repo.addView(view);
    for (const url of urls) {
      const known = replicator.remembered[keyOf(url)];
      const at = known ? new Date(known.at) : null;
      replicator.workers.push(
        new MirrorWorker({
          orgId: repo.orgId,
          gitdir: repo.gitdir,
          url,
          git: deps.git,
          settings: deps.settings,
          slots: deps.slots,
          logger: deps.logger,
          head: () => repo.headCommit,
          known: known && at && !Number.isNaN(at.getTime()) ? { commit: known.commit, at } : null,
          remember: (commit, when) => replicator.remember(url, commit, when),
          pushed: deps.pushed,
        }),
      );
    }
    return replicator;
  }

  get orgId(): string {
    return this.repo.orgId;
  }

  /** Each mirror's progress and lag, in the order the mirrors were configured. */
  status(now = Date.now()): MirrorStatus[] {
    const history = this.repo.history;
    const all = history.all();
    return this.workers.map((w) => {
      const progress = w.status();
      const lagCommits = (progress.pushedCommit === null ? undefined : history.countAfter(progress.pushedCommit)) ?? all.length;
      const oldest = all[all.length - lagCommits];
      const since = oldest ? (this.publishedAt.get(oldest.commitId) ?? oldest.timestamp * 1000) : now;
      return { ...progress, lagCommits, lagSeconds: lagCommits === 0 ? 0 : Math.max(0, (now - since) / 1000) };
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
    await this.saving;
  }

  private forgetOldTimes(): void {
    for (const id of this.publishedAt.keys()) {
      if (this.publishedAt.size <= PUBLISH_TIMES_KEPT) return;
      this.publishedAt.delete(id);
    }
  }

  private get file(): string {
    return `${this.repo.gitdir}/${REPLICATION_FILE}`;
  }

  private async load(): Promise<Record<string, Remembered>> {
    try {
      const parsed: unknown = JSON.parse(await this.deps.fs.readFile(this.file, 'utf8'));
      const mirrors = (parsed as { mirrors?: unknown }).mirrors;
      if (mirrors && typeof mirrors === 'object') return mirrors as Record<string, Remembered>;
    } catch (err) {
      // Only a cache of where the mirrors were: unreadable, the lag counts from the root until the first push.
      if (errnoCode(err) !== 'ENOENT') this.deps.logger.warn('could not read where the mirrors were; the first push tells', { org: this.orgId, error: String(err) });
    }
    return {};
  }

  /**
   * Writes where a mirror now is; one write at a time, never failing the push (only the lag after a restart
   * depends on it). Renamed into place but not fsynced: pushes come several a second under load, and their
   * fsyncs would queue with the group commits'. A crash may leave the file from before (or none): the lag
   * then counts from there until the start push, which tells the truth.
   */
  private remember(url: string, commit: string, at: Date): Promise<void> {
    this.remembered[keyOf(url)] = { commit, at: at.toISOString() };
    const { fs } = this.deps;
    const tmp = `${this.file}.tmp`;
    this.saving = this.saving
      .then(async () => {
        await fs.writeFile(tmp, `${JSON.stringify({ mirrors: this.remembered })}\n`);
        await fs.rename(tmp, this.file);
      })
      .catch((err: unknown) => this.deps.logger.warn('could not record where a mirror is', { org: this.orgId, error: String(err) }));
    return this.saving;
  }
}

/** A mirror's key in the file: a hash of its URL, so that no credential in it is written down. */
function keyOf(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 32);
}
