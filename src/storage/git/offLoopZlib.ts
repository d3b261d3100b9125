import { promisify } from 'node:util';
import { deflate, inflate } from 'node:zlib';

const inflateAsync = promisify(inflate);
const deflateAsync = promisify(deflate);

/** zlib's smallest chunk; the largest one we ask for (beyond it, a few more passes cost nothing that matters). */
const MIN_CHUNK = 64 * 1024;
const MAX_CHUNK = 64 * 1024 * 1024;

/** A chunk a little larger than what is expected: one filled exactly would make zlib ask for another, to find nothing. */
const chunkFor = (bytes: number): number => Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, Math.ceil(bytes) + 1024));

/**
 * Inflates on libuv's thread pool in one pass, its output buffer sized to `expectedBytes`. With Node's default
 * 16 KiB chunks each chunk is a hop back to the event loop: on 1 and 20 MiB of text (test/bench/zlibChunks.ts),
 * about twice the CPU of inflating in place, and 2-4 ms of event loop per MiB; in one pass the CPU is that of
 * `inflateSync` and the event loop spends well under a millisecond per MiB. `maxOutputLength`
 * bounds what a damaged or hostile stream may grow to.
 */
export function inflateOffLoop(compressed: Uint8Array, expectedBytes: number, maxOutputLength?: number): Promise<Buffer> {
  return inflateAsync(compressed, { chunkSize: chunkFor(expectedBytes), ...(maxOutputLength !== undefined ? { maxOutputLength } : {}) });
}

/** Deflates on libuv's thread pool in one pass (see `inflateOffLoop`): the output is at most about the input's size. */
export function deflateOffLoop(raw: Uint8Array, level: number): Promise<Buffer> {
  return deflateAsync(raw, { level, chunkSize: chunkFor(raw.byteLength) });
}
