import { scoreOf } from './searchHits.js';

export interface SearchRow {
  id: number;
  path: string;
  /** 1 + relevance for a match in the path, relevance alone otherwise; relevance in (0, 1). */
  score: number;
}

/** A ranked search as SearchDb takes it: FTS5 expressions, the read ranks the caller may read, a page. */
export interface RankingArgs {
  match: string;
  pathMatch: string;
  needs: readonly number[];
  /** Only paths in one of these [from, to) ranges (a key's scopes, a prefix); absent: any path. */
  ranges?: ReadonlyArray<{ from: string; to: string }>;
  limit: number;
  offset: number;
}

/** Path matches weigh ten times a content match in BM25 (they also rank first, see `rankingQuery`). */
const RANK = 'bm25(docs, 10.0, 1.0)';

/**
 * The statement of SearchDb.search and its values: the best matches, path matches first, then by BM25, then by
 * path (a stable order for paging). Only rows whose `need` is in `needs` are ever read past the match: a row the
 * caller may not read is neither counted nor paged over. One statement per number of ranges (at most a key's 50
 * scopes), each compiled once and kept by the caller.
 */
export function rankingQuery(args: RankingArgs): { sql: string; values: Record<string, string | number> } {
  const { match, pathMatch, needs, ranges, limit, offset } = args;
  const mask = needs.reduce((m, n) => m | (1 << n), 0);
  const within = ranges?.length ? `AND (${ranges.map((_, i) => `(items.path >= :from${i} AND items.path < :to${i})`).join(' OR ')})` : '';
  const sql = `
      SELECT items.id AS id, items.path AS path, ${RANK} AS rank,
             docs.rowid IN (SELECT rowid FROM paths WHERE paths MATCH :pathMatch) AS inPath
      FROM docs JOIN items ON items.id = docs.rowid
      WHERE docs MATCH :match AND ((:mask >> items.need) & 1) = 1
        ${within}
      ORDER BY inPath DESC, rank, items.path
      LIMIT :limit OFFSET :offset`;
  const values: Record<string, string | number> = { ':match': match, ':pathMatch': pathMatch, ':mask': mask, ':limit': limit, ':offset': offset };
  ranges?.forEach((range, i) => Object.assign(values, { [`:from${i}`]: range.from, [`:to${i}`]: range.to }));
  return { sql, values };
}

/** A result row of `rankingQuery` as SearchDb answers it. */
export function searchRowOf(row: Record<string, unknown>): SearchRow {
  return { id: Number(row.id), path: String(row.path), score: scoreOf(Number(row.inPath), Number(row.rank)) };
}
