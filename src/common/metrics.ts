/**
 * What the layers report for GET /metrics, injected like the Logger (design.md, "Metrics injected like
 * the logger"): storage and HTTP call these; app/ backs them with prom-client or leaves the silent default.
 * No labels that grow with the data (organizations, paths, keys): a scrape stays small.
 */
export interface Metrics {
  /** One answered HTTP request; `route` is the router's pattern, never the raw path. */
  request(r: { method: string; route: string; status: number; seconds: number }): void;
  /** One group commit made durable and published: how many commits it held, how long its fsyncs took. */
  groupCommit(c: { commits: number; fsyncSeconds: number }): void;
  /** One repack of a repository with C git. */
  repack(r: { seconds: number; ok: boolean }): void;
  /**
   * One search query answered: `seconds` from its call to its answer, waits for a catch-up or a staged batch
   * included; `querySeconds` its own time, what its key's search time is charged (http/searchTime.ts).
   */
  search(s: { seconds: number; querySeconds: number }): void;
  /** One search refused because its key had used its search time (a 429; http/searchTime.ts). */
  searchRefused(): void;
  /** One organization closed for being idle while too many were open (storage/repo/openOrgs.ts). */
  orgClosed(): void;
  /** One push to a git mirror (replication), by how it ended. */
  replicationPush(p: { outcome: 'pushed' | 'rejected' | 'failed'; seconds: number }): void;
}

export const silentMetrics: Metrics = { request() {}, groupCommit() {}, repack() {}, search() {}, searchRefused() {}, orgClosed() {}, replicationPush() {} };

/** Seconds since `started` (a `process.hrtime.bigint()` reading). */
export function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/**
 * Who may read GET /metrics: nobody (`off`), clients on this machine (`local`, the default: the socket's peer is
 * a loopback address and no proxy header says it forwards someone else), anyone (`on`: a private network), or
 * whoever sends `Authorization: Bearer <token>`.
 */
export type MetricsAccess = { mode: 'off' } | { mode: 'local' } | { mode: 'on' } | { mode: 'token'; token: string };
