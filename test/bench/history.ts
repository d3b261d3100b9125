/**
 * The history targets: the history of an item with 1,000 versions,
 * in a repository of 20,000 commits, answered in under 50 ms; `?version=n` in
 * under 20 ms. Also server startup with the history log present and rebuilt.
 *
 * Run with `npx tsx test/bench/history.ts [commits] [itemsPerFolder]`
 * (defaults 20000 and 200). The fixture is built straight through OrgRepo on a
 * real temporary directory, with writes submitted concurrently so group commit
 * batches them; then a real server is started on it and measured over HTTP,
 * and the domain functions are measured in process to separate the HTTP cost.
 */
import { promises as nodeFs } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { getHistory, getItemVersion } from '../../src/domain/history.js';
import { createKey, type Actor } from '../../src/domain/keys.js';
import { silentLogger } from '../../src/common/log.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import type { ItemRecord } from '../../src/storage/repo/itemRecord.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { OrgRepo, type RepoView, type WriteIntent } from '../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { commitCount, hostGit } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { textRecord } from '../support/records.js';

const fs = nodeFs as unknown as FsPromises;
const COMMITS = Number(process.argv[2] ?? 20_000);
const PER_FOLDER = Math.min(1000, Number(process.argv[3] ?? 200));
const HOT_VERSIONS = Math.min(1000, COMMITS);
const HOT = 'hot/item.md';
const ORG = 'default';
/** Writes submitted at once: several group commits (at most 256 commits each) in flight. */
const WINDOW = 1024;
const RUNS = 50;
const TARGET_HISTORY_MS = 50;
const TARGET_VERSION_MS = 20;
const AUTHOR = { name: 'bench', email: 'key_00000000bench000' };
const EPOCH = Date.UTC(2024, 0, 1);

const newRecord = (path: string, when: Date): ItemRecord => textRecord(path, { when, createdBy: AUTHOR.email, updatedBy: AUTHOR.email });

function putIntent(view: RepoView, path: string, content: string, when: Date): WriteIntent {
  const current = view.get(path);
  return {
    mutation: 'put',
    path,
    record: current ? { ...current.record, updatedAt: when.toISOString() } : newRecord(path, when),
    content,
    action: current ? 'update' : 'create',
    summary: current ? `Update ${path}` : `Create ${path}`,
    author: AUTHOR,
    when,
  };
}

const hotContent = (version: number): string => `# Hot item\n\nversion ${version}\n`;

/** Write i (0-based) of the fixture: every (COMMITS / HOT_VERSIONS)-th one is the hot item, the rest are new items. */
function plan(i: number): { path: string; content: string } {
  const stride = Math.floor(COMMITS / HOT_VERSIONS);
  if (i % stride === 0 && i / stride < HOT_VERSIONS) {
    const version = i / stride + 1;
    return { path: HOT, content: hotContent(version) };
  }
  const other = i - Math.min(HOT_VERSIONS, Math.floor(i / stride) + 1);
  const folder = Math.floor(other / PER_FOLDER);
  return { path: `f${String(folder).padStart(3, '0')}/item-${other % PER_FOLDER}.md`, content: `item ${other}\n` };
}

function stats(samples: number[]): { median: number; p95: number; max: number; min: number } {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
  return { median: at(0.5), p95: at(0.95), max: s[s.length - 1] as number, min: s[0] as number };
}

const ms = (n: number): string => n.toFixed(1);

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const value = await fn();
  return [performance.now() - t, value];
}

/** Random versions 1..HOT_VERSIONS, each once (every request reads a different commit: no warm tree for it). */
function randomVersions(count: number): number[] {
  const all = Array.from({ length: HOT_VERSIONS }, (_, i) => i + 1);
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [all[i], all[j]] = [all[j] as number, all[i] as number];
  }
  return all.slice(0, count);
}

const tmp = await tmpDir('ks-bench-history');
const dataDir = tmp.dir;
const rows: string[][] = [];
let exitCode = 0;
try {
  // ---- fixture ----
  const orgs = new OrgStore({ git: hostGit, fs, dataDir, logger: silentLogger });
  await orgs.create(ORG, new Date(EPOCH));
  const gitdir = orgs.gitdirOf(ORG);
  let repo = await OrgRepo.open({ orgId: ORG, fs, gitdir, logger: silentLogger });
  console.log(`building ${COMMITS} commits (${HOT_VERSIONS} to ${HOT}, the rest to new items, ${PER_FOLDER} per folder) in ${dataDir}`);
  const buildStart = performance.now();
  let done = 0;
  let reported = 0;
  for (let start = 0; start < COMMITS; start += WINDOW) {
    const writes: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(COMMITS, start + WINDOW); i++) {
      const { path, content } = plan(i);
      const when = new Date(EPOCH + (i + 1) * 1000);
      writes.push(repo.write((view) => putIntent(view, path, content, when)));
    }
    await Promise.all(writes);
    done += writes.length;
    if (done - reported >= 2000 || done === COMMITS) {
      reported = done;
      const s = (performance.now() - buildStart) / 1000;
      console.log(`  ${done} commits, ${s.toFixed(1)} s, ${(done / s).toFixed(0)} commits/s`);
    }
  }
  const buildSeconds = (performance.now() - buildStart) / 1000;
  await repo.close();
  const total = await commitCount(gitdir);
  console.log(`built in ${buildSeconds.toFixed(1)} s (${(COMMITS / buildSeconds).toFixed(0)} commits/s); git rev-list --count main: ${total}`);
  if (total < COMMITS) throw new Error(`expected at least ${COMMITS} commits, git counts ${total}`);
  const logFile = `${gitdir}/knowledge-history.jsonl`;
  const logBytes = (await nodeFs.stat(logFile)).size;
  console.log(`history log: ${(logBytes / 1024 / 1024).toFixed(1)} MiB`);

  // ---- in process: the domain functions on a freshly opened repository ----
  const [openMs, fresh] = await timed(() => OrgRepo.open({ orgId: ORG, fs, gitdir, logger: silentLogger }));
  repo = fresh;
  const actor: Actor = { keyId: AUTHOR.email, keyName: AUTHOR.name, orgId: ORG, role: 'admin' };
  const check = getHistory({ repo, actor, path: HOT });
  if (check.length !== HOT_VERSIONS) throw new Error(`history has ${check.length} versions, expected ${HOT_VERSIONS}`);
  for (let i = 0; i < 5; i++) getHistory({ repo, actor, path: HOT });
  const inHistory: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    getHistory({ repo, actor, path: HOT });
    inHistory.push(performance.now() - t);
  }
  const inVersion: number[] = [];
  for (const n of randomVersions(RUNS)) {
    const [t, item] = await timed(() => getItemVersion({ repo, actor, path: HOT, version: n }));
    if (item.content !== hotContent(n)) throw new Error(`version ${n}: wrong content ${JSON.stringify(item.content)}`);
    inVersion.push(t);
  }
  await repo.close();

  // ---- over HTTP ----
  const keys = new KeyStore({ fs, dataDir, logger: silentLogger });
  const { secret } = await createKey({ keys, orgId: ORG, role: 'admin', name: 'bench' });
  const get = async (server: TestServer, path: string): Promise<Record<string, unknown>> => {
    const res = await fetch(`${server.url}/api/v1/knowledge/${path}`, { headers: { Authorization: `Bearer ${secret}` } });
    const body = (await res.json()) as { success: boolean; data?: Record<string, unknown> };
    if (res.status !== 200 || !body.data) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    return body.data;
  };
  const historyPath = `history/${HOT}`;
  /** Server start (listening), then the first request, which opens the organization (index + history log). */
  const start = async (): Promise<{ server: TestServer; listenMs: number; firstMs: number }> => {
    const [listenMs, server] = await timed(() => startTestServer({ dataDir }));
    const [firstMs, data] = await timed(() => get(server, historyPath));
    if ((data.versions as unknown[]).length !== HOT_VERSIONS) throw new Error('wrong history length over HTTP');
    return { server, listenMs, firstMs };
  };

  const warm = await start();
  const server = warm.server;
  const httpHistory: number[] = [];
  const httpVersion: number[] = [];
  try {
    for (let i = 0; i < 5; i++) await get(server, historyPath);
    for (let i = 0; i < RUNS; i++) httpHistory.push((await timed(() => get(server, historyPath)))[0]);
    for (const n of randomVersions(RUNS)) {
      const [t, data] = await timed(() => get(server, `items/${HOT}?version=${n}`));
      if ((data.item as { content?: string }).content !== hotContent(n)) throw new Error(`HTTP version ${n}: wrong content`);
      httpVersion.push(t);
    }
  } finally {
    await server.close();
  }

  // Restart with the log intact (the run above may have been the first open of the org after the build).
  const again = await start();
  await again.server.close();
  // Restart with the log deleted: rebuilt from git.
  await nodeFs.unlink(logFile);
  const rebuilt = await start();
  await rebuilt.server.close();
  const rebuiltBytes = (await nodeFs.stat(logFile)).size;
  if (rebuiltBytes !== logBytes) throw new Error(`rebuilt log is ${rebuiltBytes} bytes, was ${logBytes}`);

  // ---- report ----
  const hh = stats(httpHistory);
  const hv = stats(httpVersion);
  const ih = stats(inHistory);
  const iv = stats(inVersion);
  const verdict = (value: number, target: number): string => (value < target ? 'met' : '**missed**');
  rows.push(
    ['history, HTTP (1,000 versions)', ms(hh.median), ms(hh.p95), ms(hh.max), `< ${TARGET_HISTORY_MS}`, verdict(hh.p95, TARGET_HISTORY_MS)],
    ['history, in process (getHistory)', ms(ih.median), ms(ih.p95), ms(ih.max), `< ${TARGET_HISTORY_MS}`, verdict(ih.p95, TARGET_HISTORY_MS)],
    ['?version=n, HTTP (random n)', ms(hv.median), ms(hv.p95), ms(hv.max), `< ${TARGET_VERSION_MS}`, verdict(hv.p95, TARGET_VERSION_MS)],
    ['?version=n, in process (getItemVersion)', ms(iv.median), ms(iv.p95), ms(iv.max), `< ${TARGET_VERSION_MS}`, verdict(iv.p95, TARGET_VERSION_MS)],
  );
  console.log('');
  console.log(`fixture: ${total} commits on main, ${HOT_VERSIONS} versions of ${HOT}, ${COMMITS - HOT_VERSIONS} other items (${PER_FOLDER} per folder); ${RUNS} runs each`);
  console.log('');
  console.log('| measurement | median ms | p95 ms | max ms | target ms | p95 vs target |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log('');
  console.log('| startup | server listening ms | first request (opens the org) ms | total ms |');
  console.log('|---|---|---|---|');
  console.log(`| OrgRepo.open in process, log present | – | ${ms(openMs)} | ${ms(openMs)} |`);
  for (const [label, s] of [
    ['server, log present (first start after build)', warm],
    ['server, log present (restart)', again],
    ['server, log deleted (rebuilt from git)', rebuilt],
  ] as const) {
    console.log(`| ${label} | ${ms(s.listenMs)} | ${ms(s.firstMs)} | ${ms(s.listenMs + s.firstMs)} |`);
  }
  console.log('');
  console.log(`build: ${COMMITS} commits in ${buildSeconds.toFixed(1)} s (${(COMMITS / buildSeconds).toFixed(0)} commits/s); history log ${(logBytes / 1024 / 1024).toFixed(1)} MiB, rebuilt byte for byte`);
} catch (err) {
  console.error(err);
  exitCode = 1;
} finally {
  await tmp.cleanup();
}
process.exit(exitCode);
