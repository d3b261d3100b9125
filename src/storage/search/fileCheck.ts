import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Slots } from '../../common/slots.js';
import { besideModule, workerScript } from '../../common/workerScript.js';
import type { FileCheckJob } from './fileCheckWorker.js';

const WORKER_FILE = besideModule(import.meta.url, 'fileCheckWorker');

/** Checks at once, process-wide: half the cores, so that the others serve while organizations reopen after a crash. */
const checks = new Slots(Math.max(1, Math.floor(availableParallelism() / 2)));

/**
 * SQLite's `quick_check` of an index file that was not closed cleanly, in a worker thread with a SQLite of its
 * own. In place, on the event loop, it held every request of every organization for as long as it read the file:
 * 5.2 s for an index of 50,000 items (a /healthz probe after a kill -9), long enough for a liveness probe to kill
 * the server again before it was done, which would then find the file not closed cleanly again. Resolves whether
 * the file is sound; rejects only when the worker could not run it (the caller may check in place).
 */
export function checkSearchFile(file: string): Promise<boolean> {
  return checks.run(
    () =>
      new Promise<boolean>((resolve, reject) => {
        const { script, eval: evaluate } = workerScript(WORKER_FILE);
        const worker = new Worker(script, { eval: evaluate, workerData: { file } satisfies FileCheckJob });
        let answered = false;
        worker.once('message', (answer: { sound: boolean }) => {
          answered = true;
          resolve(answer.sound);
        });
        worker.once('error', reject);
        worker.once('exit', (code) => {
          if (!answered) reject(new Error(`the check's worker exited (${code}) without an answer`));
        });
      }),
  );
}
