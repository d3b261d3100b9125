/**
 * File item downloads once repacked (contract §8): what a download of a packed file costs the server, and
 * what the other clients feel meanwhile. Each build gets a fresh data directory: `--files` text files of
 * `--kb` KB (random base64 lines: they pack as incompressibly as scans do), uploaded, then `gc` (git's
 * repack, beside the running server) so every download reads a pack. Then, for `--duration` seconds,
 * `--clients` clients download them in turns as fast as they can while one more client GETs an item in a
 * loop (`--rate n`: n downloads started a second, all clients together, to compare the other clients' latency
 * at the same load). Downloads ask for no compression (`Accept-Encoding: identity`, as curl does; a PDF is never
 * compressed), so the figures are the store's reads. Prints, per build and round: downloads/s, the download
 * latency, the item GET latency, and the CPU of the server and of its children (C git, when it spawns one) over
 * the round, in % of one core.
 *
 *   npm run build && npx tsx test/bench/fileDownload.ts [--files 8] [--kb 1024] [--clients 4] [--duration 8] [--rounds 2] [--rate 0] [--baseline <checkout>]
 *
 * `--baseline` runs another checkout's build (`npm run build` there) the same way, in turns with ours.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLI } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { sampleAt } from './timing.js';
import { cpuSecondsOf, memoryOf, UNPINNED } from './machine.js';
import { startOurServer } from './processes.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const FILES = options.number('--files', 8);
const KB = options.number('--kb', 1024);
const CLIENTS = options.number('--clients', 4);
const DURATION_S = options.number('--duration', 8);
const ROUNDS = options.number('--rounds', 2);
const BASELINE = options.text('--baseline');
/** Downloads started per second, all clients together (0: each client downloads again as soon as it has one). */
const RATE = options.number('--rate', 0);
for (const [name, value] of [['--files', FILES], ['--kb', KB], ['--clients', CLIENTS], ['--duration', DURATION_S], ['--rounds', ROUNDS]] as const) {
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a whole number above 0 (got ${value})`);
}
if (!(RATE >= 0)) throw new Error(`--rate must be 0 or more (got ${RATE})`);
if (KB > 25 * 1024) throw new Error('--kb must be at most 25600 (the default KNOWLEDGE_MAX_FILE_BYTES)');

const run = promisify(execFile);

/** A text file of about `kb` KB: lines of random base64. */
function textFile(kb: number): Buffer {
  const lines: string[] = [];
  for (let size = 0; size < kb * 1024; size += 77) lines.push(randomBytes(57).toString('base64'));
  return Buffer.from(`${lines.join('\n')}\n`);
}

interface RoundFigures {
  downloads: number;
  perSecond: number;
  download: { p50: number; p99: number };
  get: { count: number; p50: number; p99: number; max: number };
  /** CPU over the round, in % of one core: the server's own (serving the item GETs too), and its children's (C git). */
  cpuPercent: { server: number; children: number };
  rssMiB: number;
}

async function oneRound(who: string, cli: string, files: Buffer[]): Promise<RoundFigures> {
  const tmp = await tmpDir('ks-bench-download');
  const served = await startOurServer({ dataDir: tmp.dir, pinning: UNPINNED, cli, env: { LOG_LEVEL: 'warn', KNOWLEDGE_SEARCH: 'off' } });
  try {
    const key = /(ks_\S+)/.exec(served.output())?.[1];
    if (!key) throw new Error(`${who}: no admin key in the server's output`);
    const auth = { Authorization: `Bearer ${key}` };
    const item = `${served.url}/api/v1/knowledge/items/other/read-me.md`;
    const put = await fetch(item, { method: 'PUT', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ content: '# Read me\n\n'.repeat(100) }) });
    if (put.status !== 200) throw new Error(`${who}: item PUT answered ${put.status}`);
    const urls = files.map((_, i) => `${served.url}/api/v1/knowledge/files/bench/file-${i}.txt`);
    for (const [i, url] of urls.entries()) {
      const res = await fetch(url, { method: 'PUT', headers: { ...auth, 'Content-Type': 'text/plain' }, body: files[i] });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${who}: upload answered ${res.status}: ${text.slice(0, 200)}`);
    }
    // Git's repack beside the running server: every file's bytes move into a pack.
    await run(process.execPath, [cli, 'gc', '--data-dir', tmp.dir]);
    const { stdout } = await run('git', ['--git-dir', join(tmp.dir, 'orgs', 'default.git'), 'count-objects', '-v']);
    if (!/^count: 0$/m.test(stdout)) throw new Error(`${who}: loose objects left after gc:\n${stdout}`);

    const download = async (i: number): Promise<number> => {
      const t = performance.now();
      // Not compressed (as curl asks): gzip of a text file would be most of the server's CPU, and a PDF is not compressed.
      const res = await fetch(urls[i] as string, { headers: { ...auth, 'Accept-Encoding': 'identity' } });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status !== 200 || !body.equals(files[i] as Buffer)) throw new Error(`${who}: download ${i} answered ${res.status} with ${body.byteLength} bytes`);
      return performance.now() - t;
    };
    for (let i = 0; i < files.length; i++) await download(i); // warm: the packs opened

    const cpuBefore = await cpuSecondsOf(served.pid);
    const downloads: number[] = [];
    const gets: number[] = [];
    const started = performance.now();
    const ends = started + DURATION_S * 1000;
    let next = 0;
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < ends) {
        // Paced: the n-th download starts at n / RATE seconds, or as soon as a client is free after it.
        const n = next++;
        const due = started + (n * 1000) / RATE;
        if (RATE > 0 && due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
        if (performance.now() >= ends) break;
        downloads.push(await download(n % files.length));
      }
    });
    const reader = (async () => {
      while (performance.now() < ends) {
        const t = performance.now();
        const res = await fetch(item, { headers: auth });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${who}: item GET answered ${res.status}`);
        gets.push(performance.now() - t);
      }
    })();
    await Promise.all([...clients, reader]);
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = await cpuSecondsOf(served.pid);
    const d = [...downloads].sort((a, b) => a - b);
    const g = [...gets].sort((a, b) => a - b);
    return {
      downloads: d.length,
      perSecond: d.length / seconds,
      download: { p50: sampleAt(d, 0.5), p99: sampleAt(d, 0.99) },
      get: { count: g.length, p50: sampleAt(g, 0.5), p99: sampleAt(g, 0.99), max: sampleAt(g, 1) },
      cpuPercent: { server: ((cpuAfter.self - cpuBefore.self) * 100) / seconds, children: ((cpuAfter.children - cpuBefore.children) * 100) / seconds },
      rssMiB: (await memoryOf(served.pid))?.rssMiB ?? NaN,
    };
  } finally {
    await served.stop();
    await tmp.cleanup();
  }
}

async function main(): Promise<void> {
  const files = Array.from({ length: FILES }, () => textFile(KB));
  const builds: Array<[string, string]> = [['ours', CLI], ...(BASELINE ? [['baseline', join(BASELINE, 'dist/src/cli/main.js')] as [string, string]] : [])];
  console.log(`file downloads: ${FILES} files of ${KB} KB, packed; ${CLIENTS} clients downloading and 1 GETting an item, ${DURATION_S} s a round, ${RATE > 0 ? `${RATE} downloads/s` : 'as fast as they go'}, ${ROUNDS} round(s) per build in turns`);
  const rows: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [who, cli] of builds) {
      const f = await oneRound(who, cli, files);
      const row =
        `| ${who} | ${round} | ${f.perSecond.toFixed(1)} (${f.downloads}) | ${f.download.p50.toFixed(1)} / ${f.download.p99.toFixed(1)} | ` +
        `${f.get.p50.toFixed(1)} / ${f.get.p99.toFixed(1)} / ${f.get.max.toFixed(1)} (${f.get.count}) | ${f.cpuPercent.server.toFixed(0)}% | ${f.cpuPercent.children.toFixed(0)}% | ${f.rssMiB.toFixed(0)} |`;
      console.log(row);
      rows.push(row);
    }
  }
  console.log('\n| build | round | downloads/s (count) | download p50 / p99 ms | item GET p50 / p99 / max ms (count) | server CPU (% of a core) | C git children (% of a core) | VmRSS MiB after |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

await main();
