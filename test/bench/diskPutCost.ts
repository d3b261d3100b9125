/**
 * What the disk under the data directory costs a sequential writer: the built server on a fresh data directory in
 * each of the given places, the same sequential PUTs to each in alternating rounds, and per place the PUT p50/p95,
 * the server's CPU per PUT by thread (its main thread; the others: V8's GC helpers and libuv's pool, where the file
 * system calls are made) and whether the place is ext4 without a journal, where file creation skips the inodes freed
 * in the last seconds to minutes (README, "The file system under the data directory").
 *
 *   npm run build && npx tsx test/bench/diskPutCost.ts [--puts 500] [--rounds 3] [--dirs /tmp,/mnt/journalled] [--sync-every 0]
 *
 * `--sync-every MS` runs `sync -f <dir>` that often beside the PUTs of every place: written back, the freed inodes'
 * blocks stop counting as recent (300 s while dirty, 5 s once clean), which shows the mechanism on a disk without a
 * journal. `--dirs` defaults to the temp directory alone; a tmpfs (/dev/shm) has no fsync cost at all, so it is a
 * floor, not a disk.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureBuilt, killAllChildren, spawnServe, type ServeChild } from '../support/child.js';
import { noJournalNote, threadsMs } from './machine.js';
import { putItem } from './putRequest.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const PUTS = options.number('--puts', 500);
const ROUNDS = options.number('--rounds', 3);
const SYNC_EVERY = options.number('--sync-every', 0);
const DIRS = (options.text('--dirs') ?? tmpdir()).split(',').filter(Boolean);
const WARMUP = 200;

interface Place {
  base: string;
  dataDir: string;
  note: string;
  server: ServeChild;
  latencies: number[];
  mainMs: number;
  othersMs: number;
  puts: number;
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

function syncLoop(dir: string): () => Promise<void> {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await new Promise<void>((resolve) => execFile('sync', ['-f', dir], () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, SYNC_EVERY));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

await ensureBuilt();
const places: Place[] = [];
let serial = 0;
try {
  for (const base of DIRS) {
    const dataDir = await mkdtemp(join(base, 'ks-bench-disk-'));
    const server = await spawnServe(dataDir, 30_000, { LOG_LEVEL: 'error', KNOWLEDGE_RATE_LIMIT_PER_KEY: '0' });
    if (!server.adminKey) throw new Error(`no admin key from the server on ${dataDir}`);
    const place: Place = { base, dataDir, note: await noJournalNote(dataDir), server, latencies: [], mainMs: 0, othersMs: 0, puts: 0 };
    places.push(place);
    for (let i = 0; i < WARMUP; i++) await putItem({ url: server.url, key: server.adminKey, path: `warm/i${i % 50}.md`, content: `warm ${i}\n` });
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Alternated, and in turn first: a machine's drift falls on every place alike.
    const order = round % 2 === 0 ? places : [...places].reverse();
    for (const place of order) {
      const stopSync = SYNC_EVERY > 0 ? syncLoop(place.dataDir) : undefined;
      const { server } = place;
      const before = threadsMs(server.pid);
      for (let i = 0; i < PUTS; i++) {
        const t = performance.now();
        const status = await putItem({ url: server.url, key: server.adminKey as string, path: `bench/f${serial % 10}/item-${serial % 100}.md`, content: `version ${serial}\n` });
        serial++;
        if (status !== 200) throw new Error(`PUT answered ${status} on ${place.dataDir}`);
        place.latencies.push(performance.now() - t);
      }
      const after = threadsMs(server.pid);
      await stopSync?.();
      place.mainMs += after.main - before.main;
      place.othersMs += after.others - before.others;
      place.puts += PUTS;
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${place.base} done\n`);
    }
  }
  console.log(`\n${PUTS} sequential PUTs × ${ROUNDS} rounds per place (after ${WARMUP} unmeasured)${SYNC_EVERY > 0 ? `, \`sync -f\` every ${SYNC_EVERY} ms beside them` : ''}\n`);
  console.log('| data directory under | PUT p50 ms | PUT p95 ms | server CPU per PUT: main thread | the other threads | in all |');
  console.log('|---|---|---|---|---|---|');
  for (const place of places) {
    const sorted = [...place.latencies].sort((a, b) => a - b);
    const per = (ms: number): string => (ms / place.puts).toFixed(2);
    console.log(`| ${place.base}${place.note} | ${quantile(sorted, 0.5).toFixed(2)} | ${quantile(sorted, 0.95).toFixed(2)} | ${per(place.mainMs)} ms | ${per(place.othersMs)} ms | ${per(place.mainMs + place.othersMs)} ms |`);
  }
} finally {
  for (const place of places) {
    await place.server.kill('SIGTERM');
    await rm(place.dataDir, { recursive: true, force: true });
  }
  await killAllChildren();
}
