/**
 * What each organization a server has opened costs it in memory. An organization stays open until more than
 * KNOWLEDGE_MAX_OPEN_ORGS are (`--max-open`, 0 here by default: none is closed), so a server hosting many small
 * ones holds up to that many: this prints the server's VmRSS (after a full GC) as it opens, writes to and
 * searches one small organization after another.
 *
 *   npm run build && npx tsx test/bench/orgMemory.ts [--orgs 200] [--items 10] [--item-kb 1] [--mode searched|indexed|off] [--max-open 0] [--ready 0] [--cache-mb 128] [--baseline <checkout>]
 *
 * Each organization gets `--items` notes of about `--item-kb` KB (their text is what the contents cache keeps:
 * `--cache-mb`, KNOWLEDGE_CACHE_MB, bounds it for all organizations together), then (mode `searched`, the
 * default) one search, which loads its ranking index; `indexed` keeps search on but never searches (the
 * SQLite index only); `off` runs with KNOWLEDGE_SEARCH=off. `--baseline` runs another checkout's build (`npm run build` there) on a copy of the
 * same organizations, after ours: before and after, side by side. The organizations are made in-process
 * before any server starts (the CLI takes a second each). `--ready n` then starts each build n times more, in
 * turns, on the organizations as the pass left them, and times its first readiness (GET /readyz opens every
 * organization) and the VmRSS once ready.
 */
import { cp, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { openAdminStore } from '../../src/app/store.js';
import { silentLogger } from '../../src/common/log.js';
import { createOrganization } from '../../src/domain/orgs.js';
import { GC_ON_SIGNAL, memoryOf, UNPINNED } from './machine.js';
import { sleep } from '../support/sleep.js';
import { startOurServer, type Served } from './processes.js';
import { loadSettings, scriptOptions } from './settings.js';

const options = scriptOptions();
const ORGS = options.number('--orgs', 200);
const ITEMS = options.number('--items', 10);
const MODE = options.text('--mode') ?? 'searched';
const BASELINE = options.text('--baseline');
const MAX_OPEN = options.number('--max-open', 0);
const READY = options.number('--ready', 0);
const ITEM_KB = options.number('--item-kb', 1);
const CACHE_MB = options.text('--cache-mb');
const EVERY = Math.max(1, Math.min(50, Math.floor(ORGS / 4)));
if (!['searched', 'indexed', 'off'].includes(MODE)) throw new Error(`--mode must be searched, indexed or off (got ${MODE})`);
if (!(Number.isInteger(ORGS) && ORGS > 0 && Number.isInteger(ITEMS) && ITEMS > 0 && Number.isInteger(ITEM_KB) && ITEM_KB > 0 && ITEM_KB <= 1000)) {
  throw new Error('--orgs, --items and --item-kb must be whole numbers above 0 (--item-kb at most 1000)');
}
if (!(Number.isInteger(MAX_OPEN) && MAX_OPEN >= 0 && Number.isInteger(READY) && READY >= 0)) throw new Error('--max-open and --ready must be whole numbers, 0 or more');

const settings = loadSettings();
/** What each start of either build runs with. */
const SERVE_ENV = { LOG_LEVEL: 'warn', KNOWLEDGE_SEARCH: MODE === 'off' ? 'off' : 'on', KNOWLEDGE_MAX_OPEN_ORGS: String(MAX_OPEN), ...(CACHE_MB ? { KNOWLEDGE_CACHE_MB: CACHE_MB } : {}) };
/** The baseline's CLI, when there is one. */
const BASELINE_CLI = BASELINE ? join(BASELINE, 'dist/src/cli/main.js') : undefined;
const work = join(settings.outDir, 'work', 'orgmemory');

/** ORGS organizations, each with its admin key, in a fresh data dir. */
async function makeOrganizations(dataDir: string): Promise<Array<{ orgId: string; secret: string }>> {
  await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const store = openAdminStore({ dataDir, logger: silentLogger });
  const made: Array<{ orgId: string; secret: string }> = [];
  for (let i = 1; i <= ORGS; i++) {
    const { orgId, secret } = await createOrganization({ orgs: store.orgs, keys: store.keys, orgId: `org${i}` });
    made.push({ orgId, secret });
    if (i % 100 === 0) console.log(`  ${i} of ${ORGS} organizations made`);
  }
  await store.orgs.closeAll();
  return made;
}

/** VmRSS in MiB after a full GC of the server (gcOnSignal.cjs answers SIGUSR2). */
async function rssAfterGc(served: Served): Promise<number> {
  process.kill(served.pid, 'SIGUSR2');
  await sleep(1_500);
  return (await memoryOf(served.pid))?.rssMiB ?? NaN;
}

async function measure(who: string, dataDir: string, orgs: Array<{ orgId: string; secret: string }>, cli?: string): Promise<Array<{ orgs: number; rss: number }>> {
  const served = await startOurServer({ dataDir, pinning: UNPINNED, cli, env: { ...GC_ON_SIGNAL, ...SERVE_ENV } });
  const points = [{ orgs: 0, rss: await rssAfterGc(served) }];
  console.log(`${who}: ${points[0]?.rss.toFixed(0)} MiB with no organization open`);
  try {
    for (const [n, { orgId, secret }] of orgs.entries()) {
      const headers = { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' };
      for (let i = 0; i < ITEMS; i++) {
        const body = JSON.stringify({ content: `# Note ${i} of ${orgId}\n\n${'Deploys go through staging before production. '.repeat(22 * ITEM_KB)}` });
        const res = await fetch(`${served.url}/api/v1/knowledge/items/notes/n${i}.md`, { method: 'PUT', headers, body });
        if (res.status !== 200) throw new Error(`${who}: PUT in ${orgId} answered ${res.status}: ${await res.text()}`);
      }
      const read = await fetch(`${served.url}/api/v1/knowledge${MODE === 'searched' ? '/search?q=staging+production' : ''}`, { headers });
      if (read.status !== 200) throw new Error(`${who}: ${MODE === 'searched' ? 'search' : 'list'} in ${orgId} answered ${read.status}`);
      await read.arrayBuffer();
      if ((n + 1) % EVERY === 0 || n + 1 === orgs.length) {
        const rss = await rssAfterGc(served);
        points.push({ orgs: n + 1, rss });
        const base = points[0]?.rss ?? 0;
        console.log(`${who}: ${n + 1} organizations: ${rss.toFixed(0)} MiB (+${((rss - base) / (n + 1)).toFixed(2)} MiB each)`);
      }
    }
    if (MAX_OPEN > 0 && orgs.length > MAX_OPEN) await timeReopening(who, served, orgs);
  } finally {
    await served.stop();
  }
  return points;
}

/**
 * A request to an organization closed for being idle (it is opened again first) against one to an open one:
 * the list of the first organizations (closed by now, least recently used) and of the last (open), in turns.
 */
async function timeReopening(who: string, served: Served, orgs: Array<{ orgId: string; secret: string }>): Promise<void> {
  const listMs = async (secret: string): Promise<number> => {
    const started = performance.now();
    const res = await fetch(`${served.url}/api/v1/knowledge`, { headers: { Authorization: `Bearer ${secret}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${who}: list answered ${res.status}`);
    return performance.now() - started;
  };
  const closed: number[] = [];
  const open: number[] = [];
  const last = orgs[orgs.length - 1] as { secret: string };
  // Each of the first 20 is the least recently used when it is asked for: closed, opened again (and another closed).
  for (const { secret } of orgs.slice(0, 20)) {
    closed.push(await listMs(secret));
    open.push(await listMs(last.secret));
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  console.log(`${who}: a list in an organization closed for being idle: median ${median(closed).toFixed(1)} ms, max ${Math.max(...closed).toFixed(1)} ms; in an open one: median ${median(open).toFixed(1)} ms`);
}

/** From the first GET /readyz to its first 200, with every organization on disk to open; then VmRSS (no GC asked). */
async function timeReadiness(who: string, dataDir: string, cli?: string): Promise<{ ms: number; rss: number }> {
  const served = await startOurServer({ dataDir, pinning: UNPINNED, cli, env: SERVE_ENV });
  try {
    const started = performance.now();
    for (;;) {
      const res = await fetch(`${served.url}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) break;
      if (performance.now() - started > 600_000) throw new Error(`${who}: not ready after 10 minutes`);
      await sleep(20);
    }
    const ms = performance.now() - started;
    const rss = (await memoryOf(served.pid))?.rssMiB ?? NaN;
    console.log(`${who}: ready in ${ms.toFixed(0)} ms, ${rss.toFixed(0)} MiB`);
    return { ms, rss };
  } finally {
    await served.stop();
  }
}

const dataDir = join(work, 'data');
console.log(`making ${ORGS} organizations (mode ${MODE}, ${ITEMS} items of ~${ITEM_KB} KB each; at most ${MAX_OPEN || 'all'} open; caches ${CACHE_MB ?? 'default'} MiB)`);
const orgs = await makeOrganizations(dataDir);
const runs: Array<{ who: string; points: Array<{ orgs: number; rss: number }> }> = [];
const theirs = BASELINE ? join(work, 'data-baseline') : undefined;
if (theirs) {
  await rm(theirs, { recursive: true, force: true });
  await cp(dataDir, theirs, { recursive: true });
}
runs.push({ who: 'ours', points: await measure('ours', dataDir, orgs) });
if (theirs) runs.push({ who: 'baseline', points: await measure('baseline', theirs, orgs, BASELINE_CLI) });

console.log(`\n| build | ${runs[0]?.points.map((p) => `${p.orgs} orgs`).join(' | ')} | MiB per organization (last point) |`);
console.log(`|---|${runs[0]?.points.map(() => '---').join('|')}|---|`);
for (const { who, points } of runs) {
  const first = points[0]?.rss ?? 0;
  const last = points[points.length - 1] ?? { orgs: 1, rss: first };
  console.log(`| ${who} | ${points.map((p) => `${p.rss.toFixed(0)} MiB`).join(' | ')} | ${((last.rss - first) / last.orgs).toFixed(2)} |`);
}

if (READY > 0) {
  console.log(`\nreadiness of ${ORGS} organizations, ${READY} starts of each build in turns (at most ${MAX_OPEN || 'all'} open)`);
  const ready = new Map<string, Array<{ ms: number; rss: number }>>();
  for (let round = 0; round < READY; round++) {
    for (const { who } of runs) {
      const baseline = who === 'baseline' && theirs !== undefined;
      const times = ready.get(who) ?? [];
      times.push(await timeReadiness(who, baseline ? theirs : dataDir, baseline ? BASELINE_CLI : undefined));
      ready.set(who, times);
    }
  }
  console.log('\n| build | first /readyz to 200 | VmRSS once ready |');
  console.log('|---|---|---|');
  for (const [who, times] of ready) {
    const span = (xs: number[]): string => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
    console.log(`| ${who} | ${span(times.map((t) => t.ms))} ms | ${span(times.map((t) => t.rss))} MiB |`);
  }
}
