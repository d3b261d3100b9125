import type { PublishedBatch } from '../repo/derivedViews.js';
import { itemChanges } from '../repo/historyLog.js';
import type { IndexEntry, IndexView } from '../repo/itemIndex.js';
import type { IndexRows, RowUpdate } from './indexRows.js';

/** The item paths a batch's commits changed, and whether one of them changed a folder rule. */
export function changedPaths(batch: Pick<PublishedBatch, 'commits'>): { paths: Set<string>; rulesChanged: boolean } {
  const paths = new Set<string>();
  let rulesChanged = false;
  for (const commit of batch.commits) {
    const items = itemChanges(commit);
    // A folder rule's commit names no item.
    if (items.length === 0) rulesChanged = true;
    for (const item of items) {
      paths.add(item.path);
      // A move leaves its old path: dropped there, indexed at the new one.
      if (item.from !== undefined) paths.add(item.from);
    }
  }
  return { paths, rulesChanged };
}

/** What each changed path becomes in `state`, with its text when its content changed (from the batch's `written` blobs when there). */
export async function updatesFor(args: {
  rows: IndexRows;
  textOf: (entry: IndexEntry) => Promise<string>;
  paths: Iterable<string>;
  state: Pick<IndexView, 'get'>;
  written: ReadonlyMap<string, string>;
}): Promise<RowUpdate[]> {
  const { rows, state, written } = args;
  const updates: RowUpdate[] = [];
  for (const path of args.paths) {
    const entry = state.get(path);
    const live = entry && entry.record.deletedAt === null ? entry : undefined;
    if (live && rows.get(path)?.blob !== live.blobOid) {
      updates.push({ path, entry: live, text: written.get(live.blobOid) ?? (await args.textOf(live)) });
    } else {
      updates.push({ path, entry: live });
    }
  }
  return updates;
}
