/**
 * What Node's asynchronous zlib costs in its default 16 KiB chunks against one pass (`storage/git/offLoopZlib.ts`)
 * and against the synchronous call: wall time, the event loop's busy time, and the process's CPU, per call, for
 * 1 and 20 MiB of base64 text (inflate) and of random bytes (deflate at level 1, as file items are stored).
 *
 *   npx tsx test/bench/zlibChunks.ts [--runs 10]
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { deflate, deflateSync, inflate, inflateSync } from 'node:zlib';
import { deflateOffLoop, inflateOffLoop } from '../../src/storage/git/offLoopZlib.js';
import { scriptOptions } from './settings.js';

const RUNS = scriptOptions().number('--runs', 10);
if (!(Number.isInteger(RUNS) && RUNS > 0)) throw new Error(`--runs must be a whole number above 0 (got ${RUNS})`);
const inflateChunked = promisify(inflate);
const deflateChunked = promisify(deflate);

async function measure(run: () => Promise<Buffer>, check: (out: Buffer) => boolean): Promise<string> {
  const loop = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < RUNS; i++) if (!check(await run())) throw new Error('wrong output');
  const wall = (performance.now() - started) / RUNS;
  const busy = performance.eventLoopUtilization(loop).active / RUNS;
  const used = process.cpuUsage(cpu);
  return `${wall.toFixed(1)} / ${busy.toFixed(1)} / ${((used.user + used.system) / 1000 / RUNS).toFixed(1)}`;
}

console.log(`| operation | size | sync | 16 KiB chunks | one pass |  (each: wall / event loop busy / CPU, ms per call, ${RUNS} calls)`);
console.log('|---|---|---|---|---|');
for (const mib of [1, 20]) {
  const lines: string[] = [];
  for (let size = 0; size < mib * 1024 * 1024; size += 77) lines.push(randomBytes(57).toString('base64'));
  const text = Buffer.from(lines.join('\n'));
  const compressed = deflateSync(text);
  const same = (out: Buffer): boolean => out.equals(text);
  const limit = { maxOutputLength: text.byteLength };
  const inflated = [
    await measure(async () => inflateSync(compressed, limit), same),
    await measure(() => inflateChunked(compressed, limit), same),
    await measure(() => inflateOffLoop(compressed, text.byteLength, text.byteLength), same),
  ];
  console.log(`| inflate (text) | ${mib} MiB | ${inflated.join(' | ')} |`);
  const noise = randomBytes(mib * 1024 * 1024);
  const any = (out: Buffer): boolean => out.byteLength > 0;
  const deflated = [
    await measure(async () => deflateSync(noise, { level: 1 }), any),
    await measure(() => deflateChunked(noise, { level: 1 }), any),
    await measure(() => deflateOffLoop(noise, 1), any),
  ];
  console.log(`| deflate level 1 (random) | ${mib} MiB | ${deflated.join(' | ')} |`);
}
