import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Interrupt } from '../../common/interrupt.js';
import { Waker } from '../../common/waker.js';
import { chunkFrame, WALK_TURN, type EventChunk } from './eventChunks.js';
import type { EventStreamSettings } from './streamLimits.js';

/** How long an ended stream's last bytes may wait for a slow client before its socket is destroyed. */
const FINAL_FLUSH_MS = 60_000;

/** Why a stream was ended by the server: the last event of the stream (`event: end`), then EOF. */
export type EndReason = 'slow-reader' | 'key-revoked' | 'server-stopping';

/** Where a stream's turns come from: the feed itself in the server process, or the server asked over IPC. */
export interface StreamSource {
  /**
   * The events after `cursor`: for a stream whose socket is idle (`room` null), the turn shared by the
   * streams alike at that commit (see SharedChunks); else a turn of its own within `room` bytes. Null when
   * `stop` said so midway.
   */
  turn(cursor: string | null, room: number | null, stop: () => boolean): Promise<EventChunk | null>;
  /** False once the key is revoked (asked after each wake-up). */
  keyValid(): Promise<boolean>;
  /** True when keyValid() would answer true without asking (see KeyCheck.knownValid). */
  keyKnownValid(): boolean;
  /** Tells `waiter` of each batch published on the organization's main, until the returned function is called. */
  watch(waiter: StreamWaiter): () => void;
}

/**
 * A stream as the one who wakes it sees it. `wake` runs its loop, which walks on its own. A stream parked
 * (its loop waiting for the next commit) with an idle socket and a key known valid can instead be handed
 * the turn its loop would take, and write it with no turn of its loop at all: 200 streams woken alike cost
 * 200 socket writes, not 200 loops' promises (see wakeParked).
 */
export interface StreamWaiter {
  wake(): void;
  /** Where the stream is parked, and the turn its loop would take there; undefined when it must be woken. */
  parked(): { at: string | null; turn: Promise<EventChunk | null> } | undefined;
  /** Writes `turn`, taken at `at`, as the loop would, and stays parked; false (nothing written) when it must be woken instead. */
  take(turn: EventChunk, at: string | null): boolean;
}

/** The socket of a stream whose head is written (writeStreamHead), whether its body is chunked (HTTP/1.1), and how it ends. */
export interface StreamSocket {
  socket: Socket;
  chunked: boolean;
  /** Ends the body (the last chunk); then the connection is kept for the next request or closed. */
  end(): void;
}

/**
 * Writes the status line, the headers and the first bytes of a stream through the response, and resolves
 * once they are in the socket's hands (the kernel's): the rest of the stream is written straight to the
 * socket, in this process or in the fan-out process it is handed to. `handedOver`: the socket leaves this
 * process, so the connection cannot serve another request after the stream (`Connection: close`).
 */
export function writeStreamHead(res: ServerResponse, handedOver: boolean): Promise<StreamSocket> {
  if (handedOver) res.shouldKeepAlive = false;
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    // no-transform: a proxy must neither compress nor hold the stream; X-Accel-Buffering: nginx must not buffer it.
    'Cache-Control': 'no-store, no-transform',
    'X-Accel-Buffering': 'no',
  });
  return new Promise((resolve, reject) => {
    // The first bytes flush the headers at once (a client knows it is connected) and set the reconnect delay.
    res.write('retry: 2000\n: connected\n\n', (err) => {
      const socket = res.socket;
      if (err || !socket || socket.destroyed) reject(err ?? new Error('client gone before the stream started'));
      // The response writes the last chunk itself (and keeps the connection when it may).
      else resolve({ socket, chunked: res.chunkedEncoding, end: () => res.end() });
    });
  });
}

/** A stream's socket in the fan-out process: the last chunk is written here, and the connection closed. */
export function handedSocket(socket: Socket, chunked: boolean): StreamSocket {
  return {
    socket,
    chunked,
    end: () => {
      if (chunked) socket.end(LAST_CHUNK);
      else socket.end();
    },
  };
}

/**
 * Writes one client's Server-Sent Events until the client goes, its key is revoked, it stops reading, or
 * the server stops. Each event is one commit (`id:` the commit id, `data:` the commit's change-feed entries
 * the key may read); commits with nothing the key may read are skipped, so a reader learns nothing (not
 * even the timing) of writes it may not see. Resuming from the last id it got walks those commits again
 * and skips them again: no gap, no duplicate.
 *
 * The same loop runs in the fan-out process (the default of `serve`) and in the server process (createApp):
 * only `source` differs. Every write is one HTTP/1.1 chunk, framed here as Node's response would frame it.
 *
 * Backpressure: the stream walks the history at the client's pace. Once `bufferBytes` wait unread it stops
 * walking until the socket drains; a client that reads nothing for `slowReaderMs` is sent `event: end`
 * (reason `slow-reader`) and dropped, so memory per stream stays bounded whatever the client does.
 */
export async function serveEventStream(args: {
  out: StreamSocket;
  source: StreamSource;
  cursor: string | null;
  settings: EventStreamSettings;
  /** Counts the stream (see EventStreams.acquire); `end` ends it early. Returns the release. */
  register: (end: () => void) => () => void;
}): Promise<void> {
  const { out, source, settings } = args;
  const { socket } = out;
  let cursor = args.cursor;
  let lastSent: string | null = null;
  let ended = false;
  const waker = new Waker();
  const finish = (reason?: EndReason): void => {
    if (ended) return;
    ended = true;
    waker.ring();
    if (socket.destroyed) return;
    if (reason) socket.write(frame(out, Buffer.from(`event: end\ndata: ${JSON.stringify({ reason, lastEventId: lastSent })}\n\n`)));
    out.end();
    // A client that reads nothing never takes the last bytes: its socket goes after a grace period.
    const linger = setTimeout(() => socket.destroy(), FINAL_FLUSH_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  };
  const release = args.register(() => finish('server-stopping'));
  // Fires when the client goes: a turn or key check still on its way is then not waited for (the stream ends,
  // and its slot is released, at once, not when a turn asked of the server comes back).
  const clientGone = new Interrupt();
  const gone = (): void => {
    ended = true;
    waker.ring();
    clientGone.fire();
  };
  socket.on('close', gone);
  // A reset client is a client gone (the loop sees `ended`); the error itself is nobody's to handle.
  socket.on('error', gone);
  if (socket.destroyed) gone();
  /** True while the loop waits for the next commit (from the turn it last wrote, with nothing more to walk). */
  let parked = false;
  const write = (turn: EventChunk): void => {
    // One ready-framed Buffer shared by every stream of the turn (chunkFrame): one write call, no framing per stream.
    if (turn.bytes.length > 0) socket.write(out.chunked ? chunkFrame(turn) : turn.bytes);
    if (turn.lastSent !== null) lastSent = turn.lastSent;
    cursor = turn.cursor;
  };
  // Parked, the loop would do just this when woken: look at the key (known valid), take the shared turn of an
  // idle socket, write it, and park again unless the turn says there is more (full, or WALK_TURN commits).
  const parkedHere = (): boolean => parked && !ended && socket.writableLength === 0 && source.keyKnownValid();
  const unwatch = source.watch({
    wake: () => waker.ring(),
    parked: () => (parkedHere() ? { at: cursor, turn: source.turn(cursor, null, () => ended) } : undefined),
    take: (turn, at) => {
      if (!parkedHere() || cursor !== at || turn.full || turn.walked === WALK_TURN) return false;
      write(turn);
      return true;
    },
  });
  const heartbeat = setInterval(() => {
    // Only on an idle socket: a comment queued behind unread events would only grow the buffer.
    if (!ended && socket.writableLength === 0) socket.write(out.chunked ? HEARTBEAT_CHUNK : HEARTBEAT);
    // The loop looks at the key again: a revoked key's stream ends even when nothing is written.
    waker.ring();
  }, settings.heartbeatMs);
  heartbeat.unref();
  try {
    while (!ended) {
      waker.clear();
      const valid = await clientGone.race(source.keyValid());
      if (valid === false) {
        finish('key-revoked');
        break;
      }
      // The events of one turn go out in one socket write: one write per listener per wake-up, not per commit.
      // An idle socket (every reader that keeps up) takes the turn shared by the streams alike at its commit.
      const idle = socket.writableLength === 0;
      const turn = await clientGone.race(source.turn(cursor, idle ? null : settings.bufferBytes - socket.writableLength, () => ended));
      // Ended meanwhile (client gone, server stopping): the turn is dropped, so `lastSent` names only what was written.
      if (ended || !turn) break;
      write(turn);
      if (turn.full) {
        if (!(await drained(socket, settings.slowReaderMs))) finish('slow-reader');
        continue;
      }
      if (turn.walked === WALK_TURN) continue;
      // Turns taken while parked (take) move `cursor` on: the next turn of the loop starts from there.
      parked = true;
      await waker.wait();
      parked = false;
    }
  } finally {
    clearInterval(heartbeat);
    // A kept-alive connection goes on to other requests: the stream's listeners go with the stream.
    socket.off('close', gone);
    socket.off('error', gone);
    unwatch();
    release();
  }
}

const HEARTBEAT = Buffer.from(': heartbeat\n\n');
const HEARTBEAT_CHUNK = Buffer.from(`${HEARTBEAT.length.toString(16)}\r\n: heartbeat\n\n\r\n`);
/** The end of a chunked body: what res.end() writes. */
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/** `bytes` as one HTTP/1.1 chunk when the body is chunked (what res.write would send), else as they are. */
function frame(out: StreamSocket, bytes: Buffer): Buffer {
  return out.chunked ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]) : bytes;
}

/** True once the socket's buffer has drained, false after `ms` (or when the client went). */
function drained(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(false);
  // Nothing waits to drain (the bytes went at once): no 'drain' would come.
  if (!socket.writableNeedDrain) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    const timer = setTimeout(() => done(false), ms);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}
