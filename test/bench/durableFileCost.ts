/**
 * What one durable file write (create, write, chmod 0444, fsync, close: what a group commit does for its pack and
 * its index, objectStager.ts `writeReadOnly`) costs the event loop, four ways, in alternating rounds:
 * - `promises`: fs.promises and a FileHandle, as the engine writes today (five trips to libuv's pool);
 * - `callbacks`: the same five calls through fs's callback API;
 * - `syncButFsync`: open, write, chmod and close on the event loop itself, only the fsync on the pool;
 * - `worker`: the five calls made synchronously on a worker thread, one message there and back.
 * Prints, per file, the wall time, the event loop's (main thread's) CPU from /proc and the whole process's.
 * A question for the engine, not a figure it publishes: each trip to the pool wakes one of its threads and is woken
 * back, which this 2-vCPU VM charges the event loop tens of microseconds for.
 *
 *   npx tsx test/bench/durableFileCost.ts [--files 1000] [--rounds 2] [--dir .tmp/bench/durable]
 */
import fs, { promises as fsp, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { loadAverage } from './machine.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const FILES = options.number('--files', 1000);
const ROUNDS = options.number('--rounds', 2);
const DIR = options.text('--dir') ?? join(process.cwd(), '.tmp', 'bench', 'durable');
const data = Buffer.alloc(2048, 97);

/** The event loop's CPU in ms, from /proc (its thread's id is the process's). */
function mainThreadMs(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const processMs = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const viaCallback = <T>(call: (cb: (err: NodeJS.ErrnoException | null, value?: T) => void) => void): Promise<T | undefined> =>
  new Promise((resolve, reject) => call((err, value) => (err ? reject(err) : resolve(value))));

const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   const fs = require('node:fs');
   parentPort.on('message', ({ id, path, data }) => {
     try {
       const fd = fs.openSync(path, 'wx', 0o644);
       try { fs.writeSync(fd, data); fs.fchmodSync(fd, 0o444); fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
       parentPort.postMessage({ id });
     } catch (err) { parentPort.postMessage({ id, error: String(err) }); }
   });`,
  { eval: true },
);
const waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
let serial = 0;
worker.on('message', ({ id, error }: { id: number; error?: string }) => {
  const w = waiting.get(id);
  waiting.delete(id);
  if (error) w?.reject(new Error(error));
  else w?.resolve();
});

const ways: Record<string, (path: string) => Promise<void>> = {
  async promises(path) {
    const handle = await fsp.open(path, 'wx', 0o644);
    try {
      await handle.write(data);
      await handle.chmod(0o444);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  async callbacks(path) {
    const fd = (await viaCallback<number>((cb) => fs.open(path, 'wx', 0o644, cb))) as number;
    try {
      await viaCallback((cb) => fs.write(fd, data, 0, data.length, null, cb));
      await viaCallback((cb) => fs.fchmod(fd, 0o444, cb));
      await viaCallback((cb) => fs.fsync(fd, cb));
    } finally {
      await viaCallback((cb) => fs.close(fd, cb));
    }
  },
  async syncButFsync(path) {
    const fd = fs.openSync(path, 'wx', 0o644);
    try {
      fs.writeSync(fd, data);
      fs.fchmodSync(fd, 0o444);
      await viaCallback((cb) => fs.fsync(fd, cb));
    } finally {
      fs.closeSync(fd);
    }
  },
  worker: (path) =>
    new Promise((resolve, reject) => {
      const id = ++serial;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, path, data });
    }),
};

console.log(`${FILES} files of ${data.length} bytes a round, ${ROUNDS} rounds, in ${DIR}; load average ${await loadAverage()}`);
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, write] of Object.entries(ways)) {
      const dir = join(DIR, `${name}-${round}`);
      fs.rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      const main0 = mainThreadMs();
      const all0 = processMs();
      const t0 = performance.now();
      for (let i = 0; i < FILES; i++) await write(join(dir, `f${i}`));
      const us = (ms: number): string => `${((ms / FILES) * 1000).toFixed(0).padStart(5)} µs`;
      console.log(`round ${round} ${name.padEnd(12)} wall ${us(performance.now() - t0)}; event loop ${us(mainThreadMs() - main0)}; process ${us(processMs() - all0)} a file`);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await worker.terminate();
}
