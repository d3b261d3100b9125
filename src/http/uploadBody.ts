import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { ContentTooLarge, InvalidInput } from '../domain/errors.js';

/** An uploaded file as received: its bytes (at most the limit), its declared type and name. */
export interface ReceivedFile {
  bytes: Buffer;
  contentType: string;
  /** The name the client gave (multipart filename), if any; X-File-Name wins over it. */
  fileName?: string;
}

/** A Koa-shaped error the one error table already answers (415 `Unsupported Content-Encoding`, 400 `Request body incomplete`). */
const httpish = (status: number, type?: string): Error => Object.assign(new Error(type ?? 'bad body'), { status, expose: true, ...(type ? { type } : {}) });

/**
 * Reads an upload's body: raw bytes with their Content-Type, or `multipart/form-data` with one
 * part named `file` (browsers). Bytes are counted as they arrive and the read stops at the limit
 * (413): memory never holds more than `limit` bytes of one upload, whatever the client sends or
 * claims. A Content-Length over the limit is refused before anything is read.
 */
export async function receiveUpload(req: IncomingMessage, limit: number): Promise<ReceivedFile> {
  refuseEarly(req, limit);
  // A request that waited for a slot may be gone already (the client left, or the server's request timeout
  // cut it): its 'aborted' and 'close' have fired, and a read would wait for them forever, holding the slot.
  if (req.destroyed || req.readableAborted) throw httpish(400, 'request.aborted');
  const gone = new Promise<never>((_, reject) => {
    req.once('close', () => {
      if (!req.complete) reject(httpish(400, 'request.aborted'));
    });
  });
  gone.catch(() => undefined); // lost the race to a finished read: nobody needs to hear of it
  const contentType = req.headers['content-type'] ?? '';
  const read = isMultipart(req) ? receiveMultipart(req, limit) : readCapped(req, limit).then((bytes) => ({ bytes, contentType }));
  return Promise.race([read, gone]);
}

/** What the headers alone refuse: an encoded body (415), a declared length over the limit (413). */
export function refuseEarly(req: IncomingMessage, limit: number): void {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') throw httpish(415);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit + (isMultipart(req) ? MULTIPART_OVERHEAD : 0)) throw new ContentTooLarge({ bytes: declared, limit });
}

/** Room for the part headers and boundaries around the file. */
const MULTIPART_OVERHEAD = 64 * 1024;

function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\/form-data\s*;/i.test(req.headers['content-type'] ?? '');
}

function readCapped(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const stop = (err: Error): void => {
      if (done) return;
      done = true;
      stream.removeAllListeners('data');
      stream.resume(); // the rest is discarded as it comes; the answer closes the connection
      reject(err);
    };
    stream.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.byteLength;
      if (size > limit) return stop(new ContentTooLarge({ bytes: size, limit }));
      chunks.push(chunk);
    });
    stream.once('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    stream.once('aborted', () => stop(httpish(400, 'request.aborted')));
    stream.once('error', (err: Error) => stop(err));
  });
}

function receiveMultipart(req: IncomingMessage, limit: number): Promise<ReceivedFile> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fileSize: limit, fields: 20, fieldSize: 4096, parts: 40, headerPairs: 40 } });
    } catch {
      return reject(new InvalidInput({ reason: 'Malformed multipart body' }));
    }
    let file: Promise<ReceivedFile> | undefined;
    let failed = false;
    const fail = (err: Error): void => {
      if (failed) return;
      failed = true;
      req.unpipe(parser);
      req.resume();
      reject(err);
    };
    parser.on('file', (name, stream, info) => {
      if (name !== 'file' || file) {
        stream.resume();
        return fail(new InvalidInput({ reason: 'The multipart body must have exactly one part, named "file"' }));
      }
      stream.once('limit', () => fail(new ContentTooLarge({ bytes: limit + 1, limit })));
      file = readCapped(stream, limit).then((bytes) => ({ bytes, contentType: info.mimeType, fileName: info.filename || undefined }));
      file.catch(fail);
    });
    parser.once('filesLimit', () => fail(new InvalidInput({ reason: 'The multipart body must have exactly one part, named "file"' })));
    parser.once('error', () => fail(new InvalidInput({ reason: 'Malformed multipart body' })));
    parser.once('close', () => {
      if (failed) return;
      if (!file) return fail(new InvalidInput({ reason: 'The multipart body must have exactly one part, named "file"' }));
      file.then(resolve, fail);
    });
    req.once('aborted', () => fail(httpish(400, 'request.aborted')));
    req.pipe(parser);
  });
}
