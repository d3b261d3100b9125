import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import type { ReadNeed } from '../storage/search/searchIndex.js';
import { requirement, requireRole } from './access.js';
import { InvalidInput, SearchOff } from './errors.js';
import type { Actor } from './keys.js';
import { validateFolderPrefix } from './paths.js';
import { can, PERMISSIONS, type Role } from './permissions.js';
import { scopedPrefixes } from './scopes.js';
import { parseSearchQuery } from './searchQuery.js';

export const DEFAULT_SEARCH_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 100;
/** Paging goes this deep into the results and no further: past the best thousand, a better query serves. */
export const MAX_SEARCH_DEPTH = 1_000;

/** One result: the item (without content), how well it matched, and its content around the best match. */
export interface SearchResult {
  record: ItemRecord;
  score: number;
  snippet: string;
}

/**
 * The search index's read rank of an item: its read permission, `inherit`
 * resolved through folder rules to the organization default, as an index into
 * PERMISSIONS. A role may read the ranks of the permissions it holds.
 */
export const readNeed: ReadNeed = (record, rules) => PERMISSIONS.indexOf(requirement(record, 'read', rules));

/** The ranks a role may read: what the index filters on inside the query, before counting or paging. */
export function readableNeeds(role: Role): number[] {
  return PERMISSIONS.flatMap((permission, rank) => (can(role, permission) ? [rank] : []));
}

/** A search's arguments as the routes take them: the query string, before it is checked. */
export interface SearchArgs {
  repo: OrgRepo;
  actor: Actor;
  q: string;
  prefix?: string;
  limit?: number;
  cursor?: string;
}

export interface SearchPage {
  results: SearchResult[];
  nextCursor: string | null;
  /** What the index's query took: a key's search time is charged by it (http/searchTime.ts). */
  ms: number;
}

/**
 * `GET /search`, checked: the role, the query, the prefix, the limit and the cursor, every refusal (403, 400) thrown
 * here, before anything runs. What it returns runs the query. The routes check first and then ask the key's search
 * time for the run: a bad query is a 400 whatever time the key has left, never a 429 that hides what to fix.
 */
export function prepareSearch(args: SearchArgs): () => Promise<SearchPage> {
  const { repo, actor } = args;
  requireRole(actor, 'knowledge:read');
  const terms = parseSearchQuery(args.q);
  const prefix = args.prefix === undefined ? undefined : validateFolderPrefix(args.prefix);
  const limit = args.limit ?? DEFAULT_SEARCH_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) throw new InvalidInput({ reason: `limit must be 1 to ${MAX_SEARCH_LIMIT}` });
  const offset = args.cursor === undefined ? 0 : decodeSearchCursor(args.cursor);
  const index = repo.search;
  if (!index) throw new SearchOff({ orgId: repo.orgId });
  // A cursor's offset is below MAX_SEARCH_DEPTH (decodeSearchCursor), so a page holds at least one.
  const take = Math.min(limit, MAX_SEARCH_DEPTH - offset);
  // The key's scopes narrow the prefix inside the query, as the read ranks do: never filtered after paging.
  const prefixes = scopedPrefixes(actor, prefix);
  return async () => {
    // One more than asked for: whether it exists says whether there is a next page.
    const { hits, ms } = await index.search({ terms, needs: readableNeeds(actor.role), prefixes, limit: take + 1, offset, snippets: take });
    const page = hits.slice(0, take);
    const more = hits.length > take && offset + take < MAX_SEARCH_DEPTH;
    return {
      results: page.map((h) => ({ record: h.entry.record, score: h.score, snippet: h.snippet })),
      nextCursor: more ? encodeSearchCursor(offset + take) : null,
      ms,
    };
  };
}

/**
 * The best matches of `q` among the items the role may read, path matches first. Items it may not read (by rank or
 * by the key's scopes) are filtered inside the index's query, so they are never counted, ranked or paged over.
 */
export function searchItems(args: SearchArgs): Promise<SearchPage> {
  return prepareSearch(args)();
}

function encodeSearchCursor(offset: number): string {
  return Buffer.from(`s${offset}`, 'utf8').toString('base64url');
}

function decodeSearchCursor(cursor: string): number {
  const m = /^s(\d{1,6})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const offset = m ? Number(m[1]) : NaN;
  if (!(offset > 0 && offset < MAX_SEARCH_DEPTH)) throw new InvalidInput({ reason: 'Invalid cursor' });
  return offset;
}
