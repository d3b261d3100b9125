import { Stream } from 'node:stream';
import compress from 'koa-compress';
import type { Middleware } from 'koa';
import type { AppState } from '../state.js';

/**
 * Below this a response goes as it is. Compression costs CPU on the one event loop: a 2 KB item with
 * `Accept-Encoding: gzip` (Node's fetch sends it by default) went from ~9,000-11,000 to ~3,500-4,900 GET/s
 * at a 1 KiB threshold. Lists, the answers that are large, still shrink several times.
 */
export const COMPRESS_THRESHOLD_BYTES = 32 * 1024;

/**
 * Compresses large answers for clients that accept it (contract §12): brotli (quality 4: fast) or gzip, as
 * the client prefers. Not git's pack streams under /git/ (git compresses its objects itself, and its smart
 * HTTP responses stream as they are made), nor event streams, which must reach the client event by event.
 */
export function compression(): Middleware<AppState> {
  const compressing = compress({
    threshold: COMPRESS_THRESHOLD_BYTES,
    filter: (type) => !/event-stream/i.test(type) && /json|text|javascript|svg|xml/i.test(type),
    deflate: false,
  });
  return async (ctx, next) => {
    if (ctx.path.startsWith('/git/')) ctx.compress = false;
    await compressing(ctx, async () => {
      await next();
      // Serialized once, here: koa-compress weighs the answer against the threshold by `ctx.response.length`,
      // which for an object is `JSON.stringify` of all of it, thrown away, before Koa serializes it again to send
      // it. For a page of 10 search results (~6 KB) that was ~20-25 µs of a search's ~400 (measured, profile).
      // A string body keeps the JSON content type the object set, and gets its Content-Length.
      if (isJsonBody(ctx.body)) ctx.body = JSON.stringify(ctx.body);
    });
  };
}

/** A body Koa would send as JSON (its `respond`): an object that is none of the kinds it sends otherwise. */
function isJsonBody(body: unknown): body is object {
  return (
    typeof body === 'object' &&
    body !== null &&
    !Buffer.isBuffer(body) &&
    !(body instanceof Stream) &&
    !(body instanceof ReadableStream) &&
    !(body instanceof Blob) &&
    !(body instanceof Response) &&
    typeof (body as { pipe?: unknown }).pipe !== 'function'
  );
}
