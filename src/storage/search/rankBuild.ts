import type { Logger } from '../../common/log.js';
import type { RankIndex, SliceStep } from './rankIndex.js';
import type { ReadGate } from './readGate.js';
import type { SearchDb } from './searchDb.js';
import { nextTurn } from '../../common/turn.js';

/** Rows read from the file per step of the build (each step is synchronous; the event loop runs between). */
const BUILD_CHUNK = 500;
/** SQLite's page cache while a step reads contents (KiB): each page is read once, so a large cache would only grow the heap. */
const LOAD_PAGE_CACHE_KIB = 1_024;

/**
 * Fills the in-memory ranking index from the FTS5 file's rows (their stored content: no repository
 * reads), in steps while the server serves; queries use FTS5 until it ends. Writes meanwhile reach the
 * copy through IndexRows as usual: a path the copy already holds was written since, and its row read
 * here is older or the same, so it is skipped. A step never runs while a staged transaction is open (the
 * file would show its uncommitted rows). Returns false when stopped (`stopped` became true).
 */
export async function buildRankIndex(args: {
  db: SearchDb;
  rank: RankIndex;
  gate: ReadGate;
  stopped: () => boolean;
  logger: Logger;
  orgId: string;
  progressEvery: number;
}): Promise<boolean> {
  const { db, rank, gate, logger, orgId, progressEvery } = args;
  const started = Date.now();
  let after = 0;
  let read = 0;
  for (;;) {
    while (gate.closed) await gate.idle();
    if (args.stopped()) return false;
    const rows = db.rowsAfter(after, BUILD_CHUNK);
    if (rows.length === 0) break;
    db.withPageCache(LOAD_PAGE_CACHE_KIB, () => {
      for (const row of rows) {
        after = row.id;
        // The content is read only for a row the copy lacks: during a first build, the catch-up has written most of them already.
        if (!rank.has(row.path)) rank.put({ path: row.path, text: db.body(row.id), need: row.need, rowid: row.id });
      }
    });
    const before = read;
    read += rows.length;
    if (Math.floor(read / progressEvery) > Math.floor(before / progressEvery)) logger.info('search ranking index: loading', { org: orgId, rows: read });
    await nextTurn();
  }
  if (!(await makeTopDocs(args))) return false;
  logger.info('search ranking index ready', { org: orgId, rows: read, ms: Date.now() - started, mib: Math.round(rank.bytes / 2 ** 20) });
  return true;
}

/** Time a slice of work on the ranking index runs before it lets the event loop run (ms). */
const SLICE_MS = 5;

/**
 * Runs `step` in slices of about SLICE_MS, never while a staged transaction is open, the event loop running before
 * each slice: the server serves meanwhile, and the caller (a commit that starts a compaction, say) returns before any
 * of the work is done.
 * Returns false when stopped (`stopped` became true) before the work was done.
 */
export async function inSlices(args: { gate: ReadGate; stopped: () => boolean }, step: SliceStep): Promise<boolean> {
  for (;;) {
    await nextTurn();
    while (args.gate.closed) await args.gate.idle();
    if (args.stopped()) return false;
    const deadline = performance.now() + SLICE_MS;
    if (step(() => performance.now() >= deadline)) return true;
  }
}

/**
 * Every long list's top documents, made at the load rather than by the first query of each of its words after a
 * start: 0.4 ms a list on average and up to 15 ms for the longest (535 lists, ~0.3 s, at 50,000 items of 2 KB),
 * which moved the median of the search bench's one-at-a-time queries (each asked once) from 0.8-0.9 to 1.1-1.3 ms.
 * Lists that grow later are made again by the query that finds them stale, as before. In slices, outside staged
 * transactions, as the load's own steps. Returns false when stopped.
 */
function makeTopDocs(args: { rank: RankIndex; gate: ReadGate; stopped: () => boolean }): Promise<boolean> {
  const { rank } = args;
  const terms = rank.longTerms();
  let next = 0;
  return inSlices(args, (until) => {
    while (next < terms.length) {
      rank.makeTopDocs(terms[next] as string);
      next++;
      if (until()) break;
    }
    return next >= terms.length;
  });
}

/** A load under way: whether it ended (`ready`), and a wait for it (tests and benches). */
export class RankLoad {
  ready = false;
  /** Until the load ends, whichever way (an organization is not closed for being idle while it runs). */
  running = true;
  /** Settles when the load ends: loaded, stopped, or failed (logged; queries then stay on FTS5). */
  private readonly ended: Promise<void>;

  constructor(args: Parameters<typeof buildRankIndex>[0]) {
    this.ended = buildRankIndex(args).then(
      (done) => {
        this.ready = done;
        this.running = false;
      },
      (err: unknown) => {
        this.running = false;
        if (!args.stopped()) args.logger.error('search ranking index: load failed; queries stay on FTS5', { org: args.orgId, error: String(err) });
      },
    );
  }

  /** Resolves once the load has ended, whichever way (a failed one never makes its waiters wait on). */
  loaded(): Promise<void> {
    return this.ended;
  }
}
