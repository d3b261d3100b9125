/**
 * What keeping the search index costs writers (one unless --writers): two servers on two copies
 * of the 10,000-item fixture, search on and off, each sent the same
 * sequential PUTs (one writer, so one PUT per group commit), in alternating
 * rounds. Reports wall time per PUT and the server's CPU per PUT (from
 * /proc), which a busy machine moves far less than PUT/s.
 *
 *   npm run build && npx tsx test/bench/putCost.ts [--puts 300] [--rounds 3] [--items 10000] [--writers 1]
 *
 * `PROFILE=1` profiles both servers (cpuProfile.mjs) into .tmp/bench/profiles/, warm-up included.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { copyFixture, ensureFixture, itemPath } from './fixtures.js';
import { cpuSecondsOf, UNPINNED } from './machine.js';
import { loadRankingIndex, stopServer } from './ours.js';
import { startOurServer, type Served } from './processes.js';
import { putItem } from './putRequest.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const opt = options.number;
const PUTS = opt('--puts', 300);
const ROUNDS = opt('--rounds', 3);
const ITEMS = opt('--items', 10_000);
const WRITERS = opt('--writers', 1);

const put = (url: string, key: string, path: string, content: string): Promise<number> => putItem({ url, key, path, content });

const fixture = await ensureFixture({ items: ITEMS, hotVersions: 0 });
const work = join(process.cwd(), '.tmp', 'bench', 'putcost');
const profiles = join(process.cwd(), '.tmp', 'bench', 'profiles');
mkdirSync(profiles, { recursive: true });
const servers: Record<string, Served> = {};
let serial = 0;
try {
  for (const mode of ['on', 'off'] as const) {
    const dataDir = await copyFixture(fixture, join(work, mode));
    const profile: Record<string, string> = process.env.PROFILE ? { NODE_OPTIONS: `--import ${pathToFileURL(join(import.meta.dirname, 'cpuProfile.mjs')).href}`, CPU_PROFILE_DIR: profiles } : {};
    servers[mode] = await startOurServer({ dataDir, pinning: UNPINNED, env: { KNOWLEDGE_SEARCH: mode, KNOWLEDGE_AUTO_REPACK_OBJECTS: '0', ...profile } });
    // The first PUT opens the organization (and, with search on, builds its index): not timed.
    await put(servers[mode].url, fixture.key, itemPath(0), `warm ${mode}`);
    if (mode === 'on') await loadRankingIndex(servers[mode] as Served, fixture.key, 10_000);
  }
  const figures: Record<string, { wall: number[]; cpu: number[] }> = { on: { wall: [], cpu: [] }, off: { wall: [], cpu: [] } };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of round % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      const s = servers[mode] as Served;
      const cpu0 = await cpuSecondsOf(s.pid);
      const t0 = performance.now();
      let left = PUTS;
      const writer = async (): Promise<void> => {
        while (left-- > 0) {
          const i = serial++;
          const k = (i * 7919) % ITEMS;
          const status = await put(s.url, fixture.key, itemPath(k), `# Item ${k}\n\nPUT #${i} of benchmark item ${k}.\n\nKnowledge kept as plain files in git: every change a commit.\n`);
          if (status !== 200) throw new Error(`PUT: ${status}`);
        }
      };
      await Promise.all(Array.from({ length: WRITERS }, writer));
      const wall = (performance.now() - t0) / PUTS;
      const cpu = (((await cpuSecondsOf(s.pid)).self - cpu0.self) * 1000) / PUTS;
      figures[mode]?.wall.push(wall);
      figures[mode]?.cpu.push(cpu);
      console.log(`round ${round}, search ${mode}: ${wall.toFixed(2)} ms per PUT, server CPU ${cpu.toFixed(2)} ms per PUT`);
    }
  }
  const best = (xs: number[]): number => Math.min(...xs);
  const on = figures.on as { wall: number[]; cpu: number[] };
  const off = figures.off as { wall: number[]; cpu: number[] };
  console.log(
    `best of ${ROUNDS}: search on ${best(on.wall).toFixed(2)} ms (CPU ${best(on.cpu).toFixed(2)}), off ${best(off.wall).toFixed(2)} ms (CPU ${best(off.cpu).toFixed(2)}); ` +
      `PUT/s ratio ${(best(off.wall) / best(on.wall)).toFixed(2)}×`,
  );
  if (process.env.PROFILE) {
    for (const s of Object.values(servers)) process.kill(s.pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 2_000));
  }
} finally {
  for (const s of Object.values(servers)) await stopServer(s);
}
