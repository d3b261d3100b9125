import type { Logger } from '../../common/log.js';
import type { IndexEntry } from '../repo/itemIndex.js';
import { byRowid, type IndexRows, type SearchSource } from './indexRows.js';

/** How much a start that rebuilds the index logs: a line every this many items. */
export const PROGRESS_EVERY = 5_000;
/** Items written per transaction while catching up (a crash loses at most this much of a rebuild). */
const CATCH_UP_CHUNK = 500;

export interface CaughtUp {
  written: number;
  removed: number;
  needs: number;
}

/**
 * Brings every row in line with the repository, reading only the items whose content differs, and
 * returns how many rows changed. Batches published while it awaits are applied by the index's own
 * `published` (an item one of them replaced is left to it); the caller keeps staged transactions out.
 */
export async function catchUpRows(args: {
  rows: IndexRows;
  source: SearchSource;
  /** An item's text to index (its content, or a file item's extracted text). */
  textOf: (entry: IndexEntry) => Promise<string>;
  logger: Logger;
  orgId: string;
  progressEvery: number;
  /** Rows read (and read ranks worked out) between two turns of the event loop (tests: small, to interleave). */
  pageSize?: number;
}): Promise<CaughtUp> {
  const { rows, source, logger, orgId, progressEvery: every } = args;
  const started = Date.now();
  const live = new Map<string, IndexEntry>();
  for (const entry of source.entries()) if (entry.record.deletedAt === null) live.set(entry.record.path, entry);
  // Read once for this pass, in pages (in one read, ~150 ms of the event loop at 50,000 rows): batches published
  // between the pages are applied as they come, so a row read may be older than its item by the end. A row a batch
  // changed belongs to an item that batch replaced: its write is skipped below, a drop looks at the item again,
  // and read ranks worked out on this copy are set against the rows as they are then.
  const indexed = await rows.allInPages(args.pageSize);
  // Both in the order of their rows' ids, new rows last, as a batch writes them (IndexRows.apply: FTS5 writes a
  // segment whenever the rowids it is given go down).
  const removed = [...indexed.keys()].filter((path) => !live.has(path)).sort((a, b) => byRowid(indexed.get(a), indexed.get(b)));
  const stale = [...live.values()].filter((e) => indexed.get(e.record.path)?.blob !== e.blobOid).sort((a, b) => byRowid(indexed.get(a.record.path), indexed.get(b.record.path)));
  const building = stale.length > every;
  if (building) logger.info('search index: building', { org: orgId, items: stale.length, of: live.size });
  // What this pass changed itself (an item a batch replaced meanwhile is the batch's, and not counted).
  let written = 0;
  let dropped = 0;
  rows.db.transaction(() =>
    removed.forEach((path) => {
      // Live again (a batch made it after `live` was taken, and its row was among the pages read): the batch's.
      if (source.get(path)?.record.deletedAt === null) return;
      const row = rows.get(path); // as it is now: a batch may have dropped it already
      if (!row) return;
      rows.drop(path, row);
      dropped++;
    }),
  );
  for (let i = 0; i < stale.length; i += CATCH_UP_CHUNK) {
    const chunk = stale.slice(i, i + CATCH_UP_CHUNK);
    const texts = await Promise.all(chunk.map((e) => args.textOf(e)));
    rows.db.transaction(() =>
      chunk.forEach((e, j) => {
        // A batch published while the texts were read may have replaced this item: it has indexed the newer one.
        if (source.get(e.record.path) !== e) return;
        rows.writeOver(e, texts[j] as string, source, indexed.get(e.record.path));
        written++;
      }),
    );
    const done = i + chunk.length;
    if (building && (Math.floor(done / every) > Math.floor(i / every) || done === stale.length)) {
      logger.info('search index: building', { org: orgId, done, of: stale.length });
    }
  }
  // Worked out in slices on the copy; set in one transaction against the rows as they are then. A folder rule
  // changed meanwhile is the batch's to apply to every row (SearchIndex.published).
  const moved = await rows.needsMoved([...live.values()], indexed, args.pageSize);
  const needs = rows.db.transaction(() => {
    const n = rows.refreshNeedsOf(moved);
    // The head the rows are at now: batches published meanwhile were applied by `published`.
    rows.db.setHead(source.headCommit);
    return n;
  });
  const changed = { written, removed: dropped, needs };
  if (changed.written + changed.removed + changed.needs > 0) {
    logger.info('search index caught up', { org: orgId, ...changed, ms: Date.now() - started });
  }
  return changed;
}
