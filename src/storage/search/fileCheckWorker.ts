import { parentPort, workerData } from 'node:worker_threads';
import { checkFile } from './searchFile.js';

/** The worker of fileCheck.ts: checks one index file on its own SQLite (a heap of its own), answers whether it is sound. */
export interface FileCheckJob {
  file: string;
}

const job = workerData as FileCheckJob;
parentPort?.postMessage({ sound: checkFile(job.file) });
