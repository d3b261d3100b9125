import { performance } from 'node:perf_hooks';
import { commitCount, git } from '../support/git.js';
import { HOT_PATH, itemPath } from './fixtures.js';
import { runLoad, type LoadResult } from './load.js';
import { memoryOf, type Pinning } from './machine.js';
import { startOurServer, type Served } from './processes.js';
import { closeConnections, jsonOf, stats, timedGet, type Stats } from './timing.js';

/**
 * The measurements of our server, each against a running
 * `knowledge-store serve` on a copy of a fixture, over real HTTP on loopback.
 */
const API = '/api/v1/knowledge';

/** Item k of a fixture, visited in a scattered order (7919 is prime, so every item comes up). */
const scattered = (n: number, items: number): number => (n * 7919) % items;

export interface Startup {
  served: Served;
  /** Spawn to the "listening" line. */
  listeningMs: number;
  /** Spawn to the first authenticated GET of an item answered 200 (the organization opened on the way). */
  firstOkMs: number;
  /** The first request alone. */
  firstRequestMs: number;
  rssMiB: number;
  hwmMiB: number;
  /** What the server logged when it opened the organization ("organization opened", with its own ms). */
  opened?: LogEntry;
}

export async function startAndProbe(args: { dataDir: string; pinning: Pinning; key: string; probePath?: string; env?: Record<string, string>; cli?: string }): Promise<Startup> {
  const served = await startOurServer({ dataDir: args.dataDir, pinning: args.pinning, env: args.env, cli: args.cli });
  const probe = `${served.url}${API}/items/${args.probePath ?? itemPath(0)}`;
  const t = performance.now();
  const first = await timedGet(probe, args.key);
  const done = performance.now();
  if (first.status !== 200) {
    await served.stop();
    throw new Error(`first GET ${probe} answered ${first.status}: ${first.body.toString('utf8').slice(0, 300)}`);
  }
  const mem = await memoryOf(served.pid);
  return {
    served,
    listeningMs: served.listeningMs,
    firstOkMs: done - served.spawnedAt,
    firstRequestMs: done - t,
    rssMiB: mem?.rssMiB ?? NaN,
    hwmMiB: mem?.hwmMiB ?? NaN,
    opened: serverLog(served.output()).find((e) => e.msg === 'organization opened'),
  };
}

export async function stopServer(served: Served): Promise<void> {
  closeConnections();
  await served.stop();
}

/** GET of items spread over the fixture, `connections` keep-alive clients; a warm-up run first, not counted. */
export async function measureGet(args: {
  served: Served;
  key: string;
  items: number;
  connections: number;
  durationS: number;
  warmupS: number;
}): Promise<LoadResult & { bodyBytes: number }> {
  const url = args.served.url;
  const sample = await timedGet(`${url}${API}/items/${itemPath(0)}`, args.key);
  if (sample.status !== 200) throw new Error(`GET ${itemPath(0)}: ${sample.status}`);
  let n = 0;
  const next = () => ({ method: 'GET' as const, path: `${API}/items/${itemPath(scattered(n++, args.items))}` });
  const common = { url, key: args.key, connections: args.connections, next, serverPid: args.served.pid };
  await runLoad({ ...common, durationS: args.warmupS });
  return { ...(await runLoad({ ...common, durationS: args.durationS })), bodyBytes: sample.bytes };
}

export interface PutRun {
  load: LoadResult;
  /** Commits git counts on main after the run minus before. */
  commits: number;
  /** Each 2xx PUT made exactly one commit: commits ≥ 2xx answers, and ≤ requests sent (a PUT cut off at the end may still commit). */
  ownCommits: boolean;
  /** Milliseconds per PUT, from the 2xx rate (for one writer, the cost of one durable PUT). */
  msPerPut: number;
  /** `git count-objects -v` after the run: how the writes left the object store. */
  objects: { loose: number; packs: number; packMiB: number };
  /** Automatic repacks the server logged during the run. */
  repacks: number;
}

/** PUT updates of existing items, each with new content (an unchanged PUT makes no commit), durable. */
export async function measurePut(args: {
  served: Served;
  key: string;
  items: number;
  connections: number;
  durationS: number;
  gitdir: string;
  tag: string;
}): Promise<PutRun> {
  const before = await commitCount(args.gitdir);
  const logFrom = args.served.output().length;
  let n = 0;
  const next = () => {
    const i = n++;
    const k = scattered(i, args.items);
    const content = `# Item ${k}\n\nPUT ${args.tag} #${i} of benchmark item ${k}.\n\nKnowledge kept as plain files in git: every change a commit, every version still there.\n`;
    return { method: 'PUT' as const, path: `${API}/items/${itemPath(k)}`, body: JSON.stringify({ content }) };
  };
  const load = await runLoad({ url: args.served.url, key: args.key, connections: args.connections, durationS: args.durationS, next, serverPid: args.served.pid });
  const commits = (await settledCount(args.gitdir)) - before;
  const repacks = serverLog(args.served.output().slice(logFrom)).filter((e) => e.msg === 'repacked');
  const counts = await git(['count-objects', '-v'], { gitdir: args.gitdir });
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(counts)?.[1] ?? NaN);
  return {
    objects: { loose: field('count'), packs: field('packs'), packMiB: field('size-pack') / 1024 },
    repacks: repacks.length,
    load,
    commits,
    ownCommits: load.non2xx === 0 && load.errors === 0 && commits >= load.ok && commits <= load.sent,
    msPerPut: load.ok > 0 ? (load.durationS * 1000) / load.ok : NaN,
  };
}

/** The commit count once it stops moving (PUTs cut off when the run ended may still be committing). */
async function settledCount(gitdir: string): Promise<number> {
  let last = await commitCount(gitdir);
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await commitCount(gitdir);
    if (now === last) return now;
    last = now;
  }
}

export interface ListFigure {
  /** Whole answer, ms. */
  total: Stats;
  /** First body byte, ms. */
  firstByte: Stats;
  bytes: number;
  items: number;
  chunked: boolean;
  requests: number;
}

interface ListBody {
  success: boolean;
  data?: { items: Array<{ path: string; content?: string }>; nextCursor?: string | null };
}

/**
 * One list, timed `samples` times after one untimed run: `unpaged` is one answer
 * with every item; `walk` pages through all of them (`limit=1000`, following
 * `nextCursor`) and times the whole walk; `page` is the first page alone.
 */
export async function measureList(args: {
  url: string;
  key: string;
  expectedItems: number;
  withContent: boolean;
  mode: 'unpaged' | 'walk' | 'page';
  samples: number;
}): Promise<ListFigure> {
  const content = `content=${args.withContent}`;
  const once = async (): Promise<{ totalMs: number; firstByteMs: number; bytes: number; items: number; chunked: boolean; requests: number }> => {
    let cursor: string | null | undefined;
    let items = 0;
    let bytes = 0;
    let requests = 0;
    let chunked = true;
    let firstByteMs = NaN;
    const start = performance.now();
    do {
      const query = args.mode === 'unpaged' ? content : `limit=1000&${content}${cursor ? `&cursor=${cursor}` : ''}`;
      const t = await timedGet(`${args.url}${API}?${query}`, args.key);
      requests++;
      if (Number.isNaN(firstByteMs)) firstByteMs = t.firstByteMs;
      const body = jsonOf<ListBody>(t, 'list');
      if (t.status !== 200 || !body.data) throw new Error(`list ${query}: ${t.status} ${t.body.toString('utf8').slice(0, 300)}`);
      if (args.withContent && body.data.items.some((i) => typeof i.content !== 'string')) throw new Error('list with content: an item without content');
      if (!args.withContent && body.data.items.some((i) => i.content !== undefined)) throw new Error('list without content: an item with content');
      items += body.data.items.length;
      bytes += t.bytes;
      chunked &&= t.chunked;
      cursor = args.mode === 'walk' ? body.data.nextCursor : null;
    } while (cursor);
    return { totalMs: performance.now() - start, firstByteMs, bytes, items, chunked, requests };
  };
  const first = await once();
  const expected = args.mode === 'page' ? Math.min(1000, args.expectedItems) : args.expectedItems;
  if (first.items !== expected) throw new Error(`list (${args.mode}, ${content}) returned ${first.items} items, expected ${expected}`);
  const runs = [];
  for (let i = 0; i < args.samples; i++) runs.push(await once());
  return {
    total: stats(runs.map((r) => r.totalMs)),
    firstByte: stats(runs.map((r) => r.firstByteMs)),
    bytes: first.bytes,
    items: first.items,
    chunked: first.chunked,
    requests: first.requests,
  };
}

/** `GET /history/<hot item>`: must list every version. */
export async function measureHistory(args: { url: string; key: string; versions: number; samples: number }): Promise<{ total: Stats; bytes: number }> {
  const url = `${args.url}${API}/history/${HOT_PATH}`;
  const once = async (): Promise<{ ms: number; bytes: number }> => {
    const t = await timedGet(url, args.key);
    const body = jsonOf<{ data?: { versions?: unknown[] } }>(t, 'history');
    if (t.status !== 200 || body.data?.versions?.length !== args.versions) {
      throw new Error(`history of ${HOT_PATH}: ${t.status}, ${body.data?.versions?.length ?? 'no'} versions, expected ${args.versions}`);
    }
    return { ms: t.totalMs, bytes: t.bytes };
  };
  const first = await once();
  for (let i = 0; i < 3; i++) await once();
  const samples: number[] = [];
  for (let i = 0; i < args.samples; i++) samples.push((await once()).ms);
  return { total: stats(samples), bytes: first.bytes };
}

export interface LogEntry {
  level?: string;
  msg?: string;
  [field: string]: unknown;
}

/**
 * Searches `served` once and waits for its organization's ranking index to be in memory (the first search loads
 * it): writes are then timed as a searched organization's are, the copy in memory kept in step. At most
 * `timeoutMs`: a build from before the ranking index (KNOWLEDGE_STORE_CLI, a before figure) never says it is ready.
 */
export async function loadRankingIndex(served: Served, key: string, timeoutMs: number): Promise<void> {
  const answer = await timedGet(`${served.url}/api/v1/knowledge/search?q=item`, key, { keepBody: false });
  if (answer.status !== 200) throw new Error(`search: ${answer.status}`);
  await logLine(() => served.output(), 'search ranking index ready', timeoutMs);
}

/**
 * Waits for the search index build a start resumed, if it resumed one (a cold start stopped before its build ended
 * leaves one): requests timed meanwhile share the event loop with it (history of the 1,000-version item: median
 * 58 ms then, 6–13 ms once done, 2026-12-02). Returns the milliseconds waited; 0 when no build said it began within
 * 2 s (its first line comes once the rows are read, after the organization opened).
 */
export async function searchBuildDone(served: Served, timeoutMs: number): Promise<number> {
  const started = performance.now();
  if (!(await logLine(() => served.output(), 'search index: building', 2_000))) return 0;
  if (!(await logLine(() => served.output(), 'search index caught up', timeoutMs))) throw new Error(`the search index build was not done within ${timeoutMs} ms`);
  return performance.now() - started;
}

/**
 * Waits for the server's first log line with `msg`, at most `timeoutMs`; returns it, or undefined when it did not
 * come. Info lines reach the output within 100 ms (the server's log buffer, README › Logs), and some (a background
 * load's end) much later.
 */
export async function logLine(output: () => string, msg: string, timeoutMs: number): Promise<LogEntry | undefined> {
  for (let waited = 0; ; waited += 50) {
    const line = serverLog(output()).find((e) => e.msg === msg);
    if (line || waited >= timeoutMs) return line;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server's JSON log lines (it runs at LOG_LEVEL=info: a line per request, and opens and repacks). */
export function serverLog(text: string): LogEntry[] {
  const out: LogEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogEntry);
    } catch {
      out.push({ level: 'unparsed', msg: line });
    }
  }
  return out;
}

/** Warnings and errors the server logged, and anything it wrote that is not a log line, for the report. */
export function serverComplaints(served: Served, label: string): string[] {
  const odd = served
    .output()
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('{') && !/Knowledge store listening on/.test(l));
  const bad = serverLog(served.output()).filter((e) => e.level !== 'info' && e.level !== 'debug');
  return [...bad.map((e) => JSON.stringify(e)), ...odd].slice(0, 20).map((l) => `${label}: server said: ${l.slice(0, 2000)}`);
}
