import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Slots } from '../common/slots.js';
import { besideModule, workerScript } from '../common/workerScript.js';
import type { ExtractKind, ExtractLimits } from './extractors.js';
import type { ExtractAnswer, ExtractJob } from './extractWorker.js';

export interface ExtractorSettings extends ExtractLimits {
  /** Extractions at once (default: one per core); the rest wait their turn. */
  concurrency?: number;
  /** An extraction still running after this is stopped (its worker terminated). */
  timeoutMs: number;
  /** The worker's V8 heap limit, in MiB. */
  maxHeapMb: number;
}

/** An extraction refused or failed: the reason the client is told (contract §8: 422 `Could not extract text: <reason>`). */
export class ExtractionError extends Error {}

/** The worker's file, beside this one (see workerScript). */
const WORKER_FILE = besideModule(import.meta.url, 'extractWorker');

/**
 * Runs each extraction in a fresh worker thread with V8 heap limits and a deadline, at most
 * `concurrency` at once (a small FIFO queue behind them): a hostile file can use up its own
 * worker's time and memory, never the server's event loop or heap. A fresh worker per file costs
 * some tens of milliseconds and means nothing of one file (pdf.js state, a poisoned prototype)
 * outlives it.
 */
export class ExtractorPool {
  private readonly slots: Slots;

  constructor(private readonly settings: ExtractorSettings) {
    this.slots = new Slots(Math.max(1, settings.concurrency ?? availableParallelism()));
  }

  /** Extractions queued behind the running ones. */
  get queued(): number {
    return this.slots.queued;
  }

  extract(args: { bytes: Uint8Array; kind: ExtractKind }): Promise<{ text: string; blobOid: string }> {
    return this.slots.run(() => this.run(args));
  }

  private run(job: ExtractJob): Promise<{ text: string; blobOid: string }> {
    const { timeoutMs, maxHeapMb, maxInflatedBytes, maxPdfPages } = this.settings;
    const limits: ExtractLimits = { maxInflatedBytes, maxPdfPages };
    return new Promise((resolve, reject) => {
      const { script, eval: evaluate } = workerScript(WORKER_FILE);
      const worker = new Worker(script, {
        eval: evaluate,
        workerData: limits,
        resourceLimits: { maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, maxHeapMb / 8)), stackSizeMb: 4 },
        stdout: true,
        stderr: true,
      });
      let settled = false;
      const finish = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        outcome();
        void worker.terminate();
      };
      const fail = (reason: string): void => finish(() => reject(new ExtractionError(reason)));
      const timer = setTimeout(() => fail(`it took longer than ${timeoutMs} ms`), timeoutMs);
      worker.once('message', (answer: ExtractAnswer) => finish(() => (answer.ok ? resolve({ text: answer.text, blobOid: answer.blobOid }) : reject(new ExtractionError(answer.reason)))));
      worker.once('error', (err: Error & { code?: string }) =>
        fail(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `it needs more than ${maxHeapMb} MiB of memory` : 'the extractor failed on it'),
      );
      worker.once('exit', () => fail('the extractor stopped'));
      // A copy: the caller still holds the bytes (they are committed once the text is had).
      worker.postMessage({ kind: job.kind, bytes: job.bytes } satisfies ExtractJob);
    });
  }
}
