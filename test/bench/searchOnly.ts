/**
 * The search phase of `npm run bench` alone (test/bench/search.ts) without its PUT comparison: cold
 * build, memory, latency, and throughput against GET item on the same server. For working on search
 * without the whole bench (which takes an hour). Needs `npm run build` first (it serves dist/).
 *
 *   npx tsx test/bench/searchOnly.ts          # prints the phase's raw results as JSON on stdout
 *   npx tsx test/bench/searchOnly.ts --put    # only the PUT comparison, search on against off (1 and 16
 *                                             # writers on the 10,000-item fixture, as `npm run bench`)
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureFixture } from './fixtures.js';
import { setupPinning } from './machine.js';
import type { Served } from './processes.js';
import { runSearchPhase } from './search.js';
import { loadSettings, progress } from './settings.js';

const settings = loadSettings();
const workDir = join(settings.outDir, 'work-search');
await rm(workDir, { recursive: true, force: true });
await mkdir(workDir, { recursive: true });
const PUT_ONLY = process.argv.includes('--put');
const docs = await ensureFixture({ items: settings.sizes.search, hotVersions: 0, contentBytes: settings.searchItemBytes, cacheDir: join(settings.outDir, 'fixtures') });
// The fixture `npm run bench` writes to in its PUT comparison (run.ts: the medium one).
const putFixture = PUT_ONLY ? await ensureFixture({ items: settings.sizes.medium, hotVersions: 0, cacheDir: join(settings.outDir, 'fixtures') }) : docs;
const pinning = await setupPinning();
const running = new Set<Served>();
const problems: string[] = [];
const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
  if (name.includes('PUT') !== PUT_ONLY) return undefined;
  progress(`${name}...`);
  try {
    return await fn();
  } catch (err) {
    problems.push(`${name} failed: ${String(err).slice(0, 500)}`);
    return undefined;
  }
};
try {
  const out = await runSearchPhase({ docs, putFixture, settings, pinning, workDir, runTag: 'searchonly', rounds: 2, connections: 32, writers: 16, running, problems, phase });
  console.log(JSON.stringify({ results: out, problems }, null, 1));
} finally {
  for (const s of running) await s.stop();
}
