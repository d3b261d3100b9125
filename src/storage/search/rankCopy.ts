import type { Logger } from '../../common/log.js';
import { inSlices, RankLoad } from './rankBuild.js';
import { RankIndex, type SliceStep, type SliceWork } from './rankIndex.js';
import type { ReadGate } from './readGate.js';
import type { SearchDb } from './searchDb.js';

/**
 * SearchIndex's rows again, in memory (RankIndex): plain-word queries are ranked there once it is loaded. It
 * follows every transaction of the file from the start; its load and its compactions run in slices while the
 * server serves, never while a staged transaction is open (the gate).
 */
export class RankCopy {
  readonly rank: RankIndex;
  private load: RankLoad | undefined;

  constructor(
    private readonly deps: { db: SearchDb; gate: ReadGate; stopped: () => boolean; logger: Logger; orgId: string; progressEvery: number },
    tuning?: { compactAt?: number; topFrom?: number; topSize?: number },
  ) {
    this.rank = new RankIndex({ ...tuning, slices: (step, what) => this.inSlices(step, what) });
    deps.db.follow(this.rank);
  }

  /**
   * Whether it serves queries, its load started if need be: by the organization's first search (or a wait for
   * it), from the file's rows while the server serves; until it is loaded, every query goes to FTS5. Not at the
   * open: an organization nobody searches does not hold its copy (at 50,000 items of ~200 bytes, 55 MiB of
   * RSS after a full GC, test/bench/engine.ts; changes written meanwhile still reach it, see IndexRows).
   */
  get ready(): boolean {
    return this.started().ready;
  }

  /** Whether its load has started and not yet ended. */
  get loading(): boolean {
    return this.load?.running ?? false;
  }

  /** Starts the load if need be; resolves once it has ended (tests and benches). */
  loaded(): Promise<void> {
    return this.started().loaded();
  }

  private started(): RankLoad {
    this.load ??= new RankLoad({ ...this.deps, rank: this.rank });
    return this.load;
  }

  /** Where it disagrees with the file's rows (for `verify`): nothing before it is loaded (it lacks rows by design). */
  differences(): string[] {
    return this.load?.ready ? this.rank.differencesFrom(this.deps.db.indexed()) : [];
  }

  /**
   * Runs the ranking index's work in slices while the server serves: a compaction (RankIndex.compactStep), which in
   * one piece held the event loop 1.3–2.1 s at 50,000 items of 2 KB (test/bench/compactPause.ts), once per as many
   * updates as there are items; and the top documents queries found due, which a query made itself before (up to
   * 15 ms for the longest lists).
   */
  private inSlices(step: SliceStep, what: SliceWork): void {
    const { gate, stopped, logger, orgId } = this.deps;
    const started = performance.now();
    let slices = 0;
    const counted: SliceStep = (until) => {
      slices++;
      return step(until);
    };
    inSlices({ gate, stopped }, counted).then(
      (done) => {
        if (done && what === 'compaction') logger.info('search ranking index compacted', { org: orgId, ms: Math.round(performance.now() - started), slices, mib: Math.round(this.rank.bytes / 2 ** 20) });
      },
      // A fault here is a bug: the lists stay where they are (each read from its pool), and a stale or missing set of
      // top documents only leaves more to the walk, so queries stay right.
      (err: unknown) => logger.error(`search ranking index: ${what} failed`, { org: orgId, error: String(err) }),
    );
  }
}
