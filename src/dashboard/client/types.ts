/** The shapes of the admin API's `data` (README: "The API", "History, trash and the admin API"). */

export interface Item {
  id: string;
  organizationId: string;
  path: string;
  content?: string;
  itemType: string;
  requiredReadPermission: string;
  requiredWritePermission: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface TrashItem extends Item {
  deletedAt: string | null;
  deletedBy: string | null;
}

export type { VersionView as Version } from '../../domain/versionView.js';

export interface ApiKey {
  id: string;
  organizationId: string;
  name: string;
  role: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** The folders the key is limited to; null: the whole organization. */
  scopes: string[] | null;
}

export interface FolderRule {
  folder: string;
  requiredReadPermission: string;
  requiredWritePermission: string;
  updatedAt: string | null;
}

/** One answer of `GET /search`: the item without content, and its content around the best match. */
export interface SearchResult {
  path: string;
  score: number;
  /** At most 300 characters of content, each match wrapped in « and » (see snippet.ts). */
  snippet: string;
  item: Item;
}

export interface SearchPage {
  results: SearchResult[];
  /** The next page's cursor, null after the last. */
  nextCursor: string | null;
}

/** An item and the ETag it was read with (what an edit saves against). */
export interface Tagged {
  item: Item;
  etag: string;
}

/** What `POST /revert` did: its commit (null: nothing undone), the paths taken back, the items left alone. */
export interface RevertOutcome {
  commitId: string | null;
  reverted: string[];
  conflicts: Array<{ path: string; why: string; current: { version: number; etag: string } | null }>;
}
