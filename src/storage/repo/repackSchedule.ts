import type { Logger } from '../../common/log.js';
import { secondsSince, type Metrics } from '../../common/metrics.js';
import type { FsPromises } from '../fs/fs.js';
import type { GitCli, RepackReport } from '../git/gitCli.js';
import { countLooseAndPacked } from '../git/objectCount.js';
import type { FlushReport } from '../git/objectStager.js';
import { rollUpPacks, type RollupReport } from '../git/packRollup.js';
import type { ObjectReader } from './objectReader.js';

/**
 * Packs (one per group commit) beyond which an automatic repack folds them
 * together. Higher than git's gc.autoPackLimit (50): each geometric repack
 * costs git a fixed ~0.4 s of CPU at 50,000 items (it reads the large pack's
 * index), which at 50 packs took a third of the server's core under one writer.
 */
const AUTO_REPACK_PACKS = 200;

/** Tree names kept for the next roll-up, at most (a roll-up that keeps failing must not grow them without end). */
const MAX_NAMES = 1_000_000;

/**
 * When one repository is repacked. Every read that misses the loose objects
 * lists and searches the packs one by one, so packs must not pile up: past
 * AUTO_REPACK_PACKS, or once `autoRepackObjects` objects were written since
 * the last repack, C git folds them together. The repack runs beside the write
 * queue, not in it: a geometric repack removes only the packs it rolled up,
 * never one written while it ran, and reads that find a pack gone retry. One
 * at a time.
 *
 * An automatic repack is a roll-up (`packRollup.ts`: git's `pack-objects` given the objects of
 * the small packs and the folders of the trees this process wrote, no walk) once every small pack
 * is one whose trees it can name: after the first `git repack` since the repository was opened, or
 * from the start when it opened with at most one pack. Loose objects (file items) and anything
 * a roll-up declines go to `git repack --geometric=2`, which packs and names them itself.
 */
export class RepackSchedule {
  /** Objects written since the last repack. */
  private objects = 0;
  /** Packs in the repository: one per group commit, until a repack folds them together. */
  private packs = 0;
  private running: Promise<unknown> | null = null;
  /** The folder of each tree written since the last repack (see FlushReport.names). */
  private names = new Map<string, string>();
  /** Every small pack's trees can be named: roll-ups instead of git's repack (see above). */
  private rollups = false;
  /**
   * Loose objects in the repository (file items' bytes), as far as this process knows: counted at the
   * open and by git after each of its repacks, plus those stored since. Kept here rather than
   * counted by a `git count-objects` before each roll-up: at 50,000 items spawning a git from the
   * server costs ~20 ms of its CPU.
   */
  private loose = 0;

  constructor(
    private readonly deps: {
      orgId: string;
      fs: FsPromises;
      gitdir: string;
      git: GitCli;
      reader: ObjectReader;
      logger: Logger;
      metrics: Metrics;
      /** Objects written that make a repack due (0: never automatically). */
      autoRepackObjects: number;
    },
  ) {}

  /** Counts what is in the repository now (at open), when repacks are automatic: in-process, no git spawned. */
  async start(): Promise<void> {
    if (this.deps.autoRepackObjects === 0) return;
    const counts = await countLooseAndPacked(this.deps.fs, this.deps.gitdir);
    this.objects = counts.loose;
    this.loose = counts.loose;
    this.packs = counts.packs;
    this.rollups = counts.packs <= 1;
  }

  /** Notes what a group commit wrote, and starts a repack in the background when one is due. */
  wrote(flushed: FlushReport): void {
    this.objects += flushed.objects;
    this.packs += flushed.packs;
    const { autoRepackObjects, logger, orgId } = this.deps;
    if (autoRepackObjects === 0) return;
    if (this.names.size + flushed.names.size > MAX_NAMES) this.names.clear();
    for (const [oid, name] of flushed.names) this.names.set(oid, name);
    const due = this.packs >= AUTO_REPACK_PACKS || this.objects >= autoRepackObjects;
    if (due && !this.running) this.one(() => this.automatic()).catch((err: unknown) => logger.warn('automatic repack failed', { org: orgId, error: String(err) }));
  }

  /** A repack under way. */
  get busy(): boolean {
    return this.running !== null;
  }

  /** Notes a loose object written (a file item's bytes): the next repack is git's, which packs it. */
  storedLoose(): void {
    this.loose++;
  }

  /** `git repack --geometric=2`, now (after the one under way, if any). */
  async repack(): Promise<RepackReport> {
    for (;;) {
      await this.settled();
      if (!this.running) return this.one(() => this.repackNow());
    }
  }

  private one<T>(run: () => Promise<T>): Promise<T> {
    const running = run().finally(() => {
      this.running = null;
    });
    this.running = running;
    return running;
  }

  /** A roll-up when it can, else git's repack. */
  private async automatic(): Promise<void> {
    const { fs, gitdir, git, reader, logger, orgId, metrics } = this.deps;
    if (!this.rollups || this.loose > 0) {
      await this.repackNow();
      return;
    }
    const started = process.hrtime.bigint();
    const names = this.takeNames();
    let report: RollupReport | null;
    try {
      report = await rollUpPacks({ fs, gitdir, git, names });
    } catch (err) {
      metrics.repack({ seconds: secondsSince(started), ok: false });
      this.giveBack(names);
      throw err;
    }
    if (!report) {
      // Nothing a geometric split would fold (packs that grow by a factor of two): git decides.
      this.giveBack(names);
      await this.repackNow();
      return;
    }
    metrics.repack({ seconds: secondsSince(started), ok: true });
    await reader.forgetDeletedPacks();
    this.objects = 0;
    this.packs -= report.packs - 1;
    // Logged as git's repacks are (the same counts), with what the roll-up did beside.
    const { listed, ...rollup } = report;
    const before = { loose: 0, packs: listed };
    logger.info('repacked', { org: orgId, before, after: { loose: 0, packs: listed - report.packs + 1 }, full: false, rollup: { ...rollup, ms: Math.round(secondsSince(started) * 1000) } });
  }

  /** The names gathered so far, for a repack starting now: the packs written while it runs are named in a new map. */
  private takeNames(): Map<string, string> {
    const names = this.names;
    this.names = new Map();
    return names;
  }

  /** A repack that did not pack them gives the names back. */
  private giveBack(names: ReadonlyMap<string, string>): void {
    names.forEach((name, oid) => this.names.has(oid) || this.names.set(oid, name));
  }

  /** Waits for a repack under way, if any (its failure was reported already). */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  private async repackNow(): Promise<RepackReport> {
    const { git, gitdir, reader, logger, orgId, metrics } = this.deps;
    const started = process.hrtime.bigint();
    const names = this.takeNames(); // git names what it packs
    let report: RepackReport;
    try {
      report = await git.repack(gitdir);
    } catch (err) {
      metrics.repack({ seconds: secondsSince(started), ok: false });
      this.giveBack(names);
      throw err;
    }
    metrics.repack({ seconds: secondsSince(started), ok: true });
    await reader.forgetDeletedPacks();
    this.objects = report.after.loose;
    this.loose = report.after.loose;
    // Counted after git finished: packs written while it ran are in the count already.
    this.packs = report.after.packs;
    // Every small pack left is one this process wrote since (or none).
    this.rollups = true;
    logger.info('repacked', { org: orgId, ...report });
    return report;
  }
}
