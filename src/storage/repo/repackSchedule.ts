import type { Logger } from '../../common/log.js';
import { secondsSince, type Metrics } from '../../common/metrics.js';
import type { GitCli, RepackReport } from '../git/gitCli.js';
import type { ObjectReader } from './objectReader.js';

/**
 * Packs (one per group commit) beyond which an automatic repack folds them
 * together. Higher than git's gc.autoPackLimit (50): each geometric repack
 * costs git a fixed ~0.4 s of CPU at 50,000 items (it reads the large pack's
 * index), which at 50 packs took a third of the server's core under one writer.
 */
const AUTO_REPACK_PACKS = 200;

/**
 * When one repository is repacked. Every read that misses the loose objects
 * lists and searches the packs one by one, so packs must not pile up: past
 * AUTO_REPACK_PACKS, or once `autoRepackObjects` objects were written since
 * the last repack, C git folds them together. The repack runs beside the write
 * queue, not in it: a geometric repack removes only the packs it rolled up,
 * never one written while it ran, and reads that find a pack gone retry. One
 * at a time.
 */
export class RepackSchedule {
  /** Objects written since the last repack. */
  private objects = 0;
  /** Packs in the repository: one per group commit, until a repack folds them together. */
  private packs = 0;
  private running: Promise<RepackReport> | null = null;

  constructor(
    private readonly deps: {
      orgId: string;
      gitdir: string;
      git: GitCli;
      reader: ObjectReader;
      logger: Logger;
      metrics: Metrics;
      /** Objects written that make a repack due (0: never automatically). */
      autoRepackObjects: number;
    },
  ) {}

  /** Counts what is in the repository now (at open), when repacks are automatic. */
  async start(): Promise<void> {
    if (this.deps.autoRepackObjects === 0) return;
    const counts = await this.deps.git.countObjects(this.deps.gitdir);
    this.objects = counts.loose;
    this.packs = counts.packs;
  }

  /** Notes what a group commit wrote, and starts a repack in the background when one is due. */
  wrote(flushed: { objects: number; packs: number }): void {
    this.objects += flushed.objects;
    this.packs += flushed.packs;
    const { autoRepackObjects, logger, orgId } = this.deps;
    const due = autoRepackObjects > 0 && (this.packs >= AUTO_REPACK_PACKS || this.objects >= autoRepackObjects);
    if (due && !this.running) this.repack().catch((err: unknown) => logger.warn('automatic repack failed', { org: orgId, error: String(err) }));
  }

  repack(): Promise<RepackReport> {
    this.running ??= this.repackNow().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Waits for a repack under way, if any (its failure was reported already). */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  private async repackNow(): Promise<RepackReport> {
    const { git, gitdir, reader, logger, orgId, metrics } = this.deps;
    const started = process.hrtime.bigint();
    let report: RepackReport;
    try {
      report = await git.repack(gitdir);
    } catch (err) {
      metrics.repack({ seconds: secondsSince(started), ok: false });
      throw err;
    }
    metrics.repack({ seconds: secondsSince(started), ok: true });
    await reader.forgetDeletedPacks();
    this.objects = report.after.loose;
    // Counted after git finished: packs written while it ran are in the count already.
    this.packs = report.after.packs;
    logger.info('repacked', { org: orgId, ...report });
    return report;
  }
}
