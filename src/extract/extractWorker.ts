import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { extract, NoText, type ExtractKind, type ExtractLimits } from './extractors.js';

/** What the pool sends: one file, once; the worker then answers and ends. */
export interface ExtractJob {
  kind: ExtractKind;
  bytes: Uint8Array;
}

export type ExtractAnswer = { ok: true; text: string; blobOid: string } | { ok: false; reason: string };

/** The git blob id of the bytes: hashed here, where 25 MiB of SHA-1 stalls nobody. */
function blobOid(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.byteLength}\0`).update(bytes).digest('hex');
}

const port = parentPort;
if (port) {
  const limits = workerData as ExtractLimits;
  port.once('message', (job: ExtractJob) => {
    const answer = (a: ExtractAnswer): void => port.postMessage(a);
    const oid = blobOid(job.bytes);
    extract(job.kind, job.bytes, limits).then(
      (text) => answer({ ok: true, text, blobOid: oid }),
      (err: unknown) => answer({ ok: false, reason: err instanceof NoText ? err.message : `the file could not be read (${err instanceof Error ? err.message.slice(0, 200) : 'unknown error'})` }),
    );
  });
}
