import { changesSince } from '../../domain/changes.js';
import { diffVersions, getHistory, getItemVersion } from '../../domain/history.js';
import { getItem, MAX_LIST_LIMIT, selectItems } from '../../domain/itemReads.js';
import { MAX_SEARCH_LIMIT, prepareSearch } from '../../domain/search.js';
import { MAX_QUERY_LENGTH } from '../../domain/searchQuery.js';
import { presentItem, presentSearchResult } from '../presenters.js';
import { arguments_, FOLDER_PREFIX, PATH, VERSION } from './schemas.js';
import { READ_ONLY, tool, type Tool } from './tool.js';

/** A page of `list` unless the agent asks for another size: enough to see a folder, small enough for a context window. */
const DEFAULT_LIST_LIMIT = 100;

const CURSOR = { type: 'string', minLength: 1, maxLength: 512, description: 'The nextCursor of the previous page, to get the next one.' } as const;

export const search = tool<{ query: string; prefix?: string; limit?: number; cursor?: string }>({
  name: 'search',
  description: [
    'Full-text search over the paths and contents of the knowledge items you may read; best matches first, a match in the path ranking above one in the content.',
    'Query syntax: words (all must match, in any order), "an exact phrase" in double quotes, -word to exclude, word* for a prefix (at least 2 letters).',
    'Each result has the path, a score, and a snippet of the content around the best match with the matches wrapped in « ». Use `read` to get an item whole.',
  ].join(' '),
  inputSchema: arguments_(
    {
      query: { type: 'string', minLength: 1, maxLength: 4 * MAX_QUERY_LENGTH, description: `What to look for (1 to ${MAX_QUERY_LENGTH} characters), e.g. deploy "staging server" -draft` },
      prefix: FOLDER_PREFIX,
      limit: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT, description: `Results per page, 1 to ${MAX_SEARCH_LIMIT} (default 20).` },
      cursor: CURSOR,
    },
    ['query'],
  ),
  annotations: { title: 'Search the knowledge store', ...READ_ONLY },
  run: async (args, { actor, repo, searchTime }) => {
    // Checked first, as the REST route does: a bad query is its own error, not "too much searching".
    const search = prepareSearch({ repo, actor, q: args.query, prefix: args.prefix, limit: args.limit, cursor: args.cursor });
    const { results, nextCursor } = await searchTime.spend(actor.keyId, search);
    return {
      results: results.map((r) => {
        const { path, score, snippet, item } = presentSearchResult(actor.orgId, r);
        return { path, score, snippet, updatedAt: item.updatedAt };
      }),
      nextCursor,
    };
  },
});

export const read = tool<{ path: string; version?: number }>({
  name: 'read',
  description:
    'Reads one knowledge item: its content, its metadata, and its etag (pass the etag as `if_match` to `write` or `edit` so that you never overwrite a change you have not seen). With `version`, the item as that version of its history left it.',
  inputSchema: arguments_({ path: PATH, version: VERSION }, ['path']),
  annotations: { title: 'Read an item', ...READ_ONLY },
  run: async (args, { actor, repo }) => {
    const item =
      args.version === undefined
        ? await getItem({ repo, actor, path: args.path })
        : await getItemVersion({ repo, actor, path: args.path, version: args.version });
    return { item: presentItem(actor.orgId, item), etag: item.etag };
  },
});

export const list = tool<{ prefix?: string; cursor?: string; limit?: number }>({
  name: 'list',
  description:
    'Lists the knowledge items you may read, in path order, without their content (use `read` for that): path, type and when each changed. One page at a time; pass nextCursor back as `cursor` for the next.',
  inputSchema: arguments_({
    prefix: FOLDER_PREFIX,
    cursor: CURSOR,
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT, description: `Items per page, 1 to ${MAX_LIST_LIMIT} (default ${DEFAULT_LIST_LIMIT}).` },
  }),
  annotations: { title: 'List items', ...READ_ONLY },
  run: async (args, { actor, repo }) => {
    const { entries, nextCursor } = selectItems({ repo, actor, prefix: args.prefix, cursor: args.cursor, limit: args.limit ?? DEFAULT_LIST_LIMIT });
    const items = entries.map(({ record: { path, itemType, updatedAt } }) => ({ path, itemType, updatedAt }));
    return { items, nextCursor: nextCursor ?? null };
  },
});

export const history = tool<{ path: string }>({
  name: 'history',
  description:
    'The versions of one item, newest first: version number, action (create, update, delete, restore, move...), commit message, author (the API key) and time. Read an old version with `read` and `version`, compare two with `diff`, bring one back with `rollback`.',
  inputSchema: arguments_({ path: PATH }, ['path']),
  annotations: { title: 'Item history', ...READ_ONLY },
  run: async (args, { actor, repo }) => ({ versions: getHistory({ repo, actor, path: args.path }) }),
});

export const diff = tool<{ path: string; from: number; to: number }>({
  name: 'diff',
  description: 'A unified diff of one item\'s content between two of its versions (numbers from `history`).',
  inputSchema: arguments_({ path: PATH, from: VERSION, to: VERSION }, ['path', 'from', 'to']),
  annotations: { title: 'Compare versions', ...READ_ONLY },
  run: async (args, { actor, repo }) => ({ from: args.from, to: args.to, diff: await diffVersions({ repo, actor, path: args.path, from: args.from, to: args.to }) }),
});

export const changes = tool<{ since?: string }>({
  name: 'changes',
  description: [
    'What changed in the store since a commit, as you see it: one entry per item (created, updated or deleted) with its path and last commit.',
    'Call it first without `since` to get the current `head`; later, pass that head as `since` to learn what changed in between, then keep the new head for next time.',
  ].join(' '),
  inputSchema: arguments_({ since: { type: 'string', minLength: 1, maxLength: 64, description: 'The `head` a previous `changes` call returned.' } }),
  annotations: { title: 'Changes since', ...READ_ONLY },
  run: async (args, { actor, repo }) => changesSince({ repo, actor, since: args.since }),
});

export const READ_TOOLS: readonly Tool[] = [search, read, list, history, diff, changes];
