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
}): Promise<CaughtUp> {
  const { rows, source, logger, orgId, progressEvery: every } = args;
  const started = Date.now();
  const live = new Map<string, IndexEntry>();
  for (const entry of source.entries()) if (entry.record.deletedAt === null) live.set(entry.record.path, entry);
  // Read once for this pass: a row a batch changes meanwhile belongs to an item that batch replaced, which is skipped below.
  const indexed = rows.all();
  // Both in the order of their rows' ids, new rows last, as a batch writes them (IndexRows.apply: FTS5 writes a
  // segment whenever the rowids it is given go down).
  const removed = [...indexed.keys()].filter((path) => !live.has(path)).sort((a, b) => byRowid(indexed.get(a), indexed.get(b)));
  const stale = [...live.values()].filter((e) => indexed.get(e.record.path)?.blob !== e.blobOid).sort((a, b) => byRowid(indexed.get(a.record.path), indexed.get(b.record.path)));
  const building = stale.length > every;
  if (building) logger.info('search index: building', { org: orgId, items: stale.length, of: live.size });
  // Every removed path is in `indexed`: no lookup.
  rows.db.transaction(() => removed.forEach((path) => rows.drop(path, indexed.get(path))));
  for (let i = 0; i < stale.length; i += CATCH_UP_CHUNK) {
    const chunk = stale.slice(i, i + CATCH_UP_CHUNK);
    const texts = await Promise.all(chunk.map((e) => args.textOf(e)));
    rows.db.transaction(() =>
      chunk.forEach((e, j) => {
        // A batch published while the texts were read may have replaced this item: it has indexed the newer one.
        if (source.get(e.record.path) === e) rows.writeOver(e, texts[j] as string, source, indexed.get(e.record.path));
      }),
    );
    const done = i + chunk.length;
    if (building && (Math.floor(done / every) > Math.floor(i / every) || done === stale.length)) {
      logger.info('search index: building', { org: orgId, done, of: stale.length });
    }
  }
  const needs = rows.db.transaction(() => {
    const n = rows.refreshNeeds();
    // The head the rows are at now: batches published meanwhile were applied by `published`.
    rows.db.setHead(source.headCommit);
    return n;
  });
  const changed = { written: stale.length, removed: removed.length, needs };
  if (changed.written + changed.removed + changed.needs > 0) {
    logger.info('search index caught up', { org: orgId, ...changed, ms: Date.now() - started });
  }
  return changed;
}
