import { versionTag, type IndexEntry } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { readable, requireRole } from './access.js';
import { InvalidInput, ItemNotFound } from './errors.js';
import type { Actor } from './keys.js';
import { validateFolderPrefix, validatePath } from './paths.js';
import { scopedPrefixes } from './scopes.js';

/** An item as the domain hands it out: the record, the content when asked for, and its version tag. */
export interface ItemView {
  record: ItemRecord;
  content?: string;
  etag: string;
}

export const MAX_LIST_LIMIT = 1000;

export async function view(repo: OrgRepo, entry: IndexEntry, withContent: boolean): Promise<ItemView> {
  const out: ItemView = { record: entry.record, etag: versionTag(entry) };
  if (withContent) out.content = await repo.readContent(entry);
  return out;
}

export function encodeCursor(path: string): string {
  return Buffer.from(path, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const path = Buffer.from(cursor, 'base64url').toString('utf8');
  try {
    return validatePath(path);
  } catch {
    throw new InvalidInput({ reason: 'Invalid cursor' });
  }
}

/**
 * Which items a list shows: every item the role may read, in path order (a page of them when `limit`
 * is given), and the cursor of the next page. Nothing is read from git yet: see `itemViews`.
 */
export function selectItems(args: {
  repo: OrgRepo;
  actor: Actor;
  prefix?: string;
  limit?: number;
  cursor?: string;
}): { entries: IndexEntry[]; nextCursor?: string | null } {
  const { repo, actor, limit } = args;
  requireRole(actor, 'knowledge:read');
  const prefix = args.prefix === undefined ? undefined : validateFolderPrefix(args.prefix);
  const after = args.cursor === undefined ? undefined : decodeCursor(args.cursor);
  const entries: IndexEntry[] = [];
  let more = false;
  for (const entry of scopedEntries(repo, actor, prefix, after)) {
    if (!readable(actor, entry, repo)) continue;
    if (limit !== undefined && entries.length === limit) {
      more = true;
      break;
    }
    entries.push(entry);
  }
  if (limit === undefined) return { entries };
  const last = entries[entries.length - 1];
  return { entries, nextCursor: more && last ? encodeCursor(last.record.path) : null };
}

/**
 * The entries under `prefix` (after `after`) within the key's scopes, in path order: a scoped key's
 * list walks its folders only. Scopes are sorted and none is inside another, so their ranges follow
 * each other in path order. `readable` still decides each entry (the scopes are checked there too).
 */
function* scopedEntries(repo: OrgRepo, actor: Actor, prefix: string | undefined, after: string | undefined): Iterable<IndexEntry> {
  const prefixes = scopedPrefixes(actor, prefix);
  if (prefixes === undefined) return yield* repo.entries({ after });
  for (const p of prefixes) yield* repo.entries({ prefix: p, after });
}

/** Contents read ahead of the consumer of `itemViews`: enough to keep git busy, few enough to stay small. */
export const LIST_READ_AHEAD = 8;

/**
 * The entries' views, in order, with content read at most `readAhead` items ahead of the consumer:
 * a list of any length holds only a few contents at a time (memory stays bounded while
 * listing 10,000 large items). A consumer that stops early stops the reads.
 */
export async function* itemViews(args: {
  repo: OrgRepo;
  entries: readonly IndexEntry[];
  withContent: boolean;
  readAhead?: number;
}): AsyncGenerator<ItemView, void, undefined> {
  const { repo, entries, withContent, readAhead = LIST_READ_AHEAD } = args;
  const pending: Promise<ItemView>[] = [];
  let next = 0;
  while (next < entries.length || pending.length > 0) {
    while (pending.length < readAhead && next < entries.length) {
      const read = view(repo, entries[next++] as IndexEntry, withContent);
      // Awaited in order below; a read that fails after the consumer has gone must not be an unhandled rejection.
      read.catch(() => undefined);
      pending.push(read);
    }
    yield await (pending.shift() as Promise<ItemView>);
  }
}

export async function getItem(args: { repo: OrgRepo; actor: Actor; path: string }): Promise<ItemView> {
  return view(args.repo, readableEntry(args), true);
}

/**
 * The index entry of the item at `path` when the actor may read it (role, path rules, scopes, item and
 * folder rules), else the error GET answers: every check of a read, made before anything is read.
 */
export function readableEntry(args: { repo: OrgRepo; actor: Actor; path: string }): IndexEntry {
  const { repo, actor } = args;
  requireRole(actor, 'knowledge:read');
  const path = validatePath(args.path);
  const entry = repo.get(path);
  if (!readable(actor, entry, repo)) throw new ItemNotFound({ path });
  return entry;
}
