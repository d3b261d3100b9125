import type { ServerResponse } from 'node:http';
import { Waker } from '../../common/waker.js';
import type { EventFeed } from '../../domain/events.js';
import type { Actor } from '../../domain/keys.js';
import type { OrgRepo } from '../../storage/repo/orgRepo.js';
import { chunkFrame, WALK_TURN, walkChunk, type EventChunk, type SharedChunks } from './eventChunks.js';
import type { EventStreamSettings } from './streamLimits.js';

/** How long an ended stream's last bytes may wait for a slow client before its socket is destroyed. */
const FINAL_FLUSH_MS = 60_000;

/** Why a stream was ended by the server: the last event of the stream (`event: end`), then EOF. */
export type EndReason = 'slow-reader' | 'key-revoked' | 'server-stopping';

/**
 * Writes one client's Server-Sent Events until the client goes, its key is revoked, it stops reading, or
 * the server stops. Each event is one commit (`id:` the commit id, `data:` the commit's change-feed entries
 * the key may read); commits with nothing the key may read are skipped, so a reader learns nothing (not
 * even the timing) of writes it may not see. Resuming from the last id it got walks those commits again
 * and skips them again: no gap, no duplicate.
 *
 * Backpressure: the stream walks the history at the client's pace. Once `bufferBytes` wait unread it stops
 * walking until the socket drains; a client that reads nothing for `slowReaderMs` is sent `event: end`
 * (reason `slow-reader`) and dropped, so memory per stream stays bounded whatever the client does.
 */
export async function serveEventStream(args: {
  res: ServerResponse;
  feed: EventFeed;
  /** The turns shared by streams alike (one per server: see SharedChunks). */
  chunks: SharedChunks;
  repo: OrgRepo;
  actor: Actor;
  cursor: string | null;
  settings: EventStreamSettings;
  /** False once the key is revoked (checked after each wake-up). */
  keyValid: () => Promise<boolean>;
  /** Counts the stream (see EventStreams.acquire); `end` ends it early. Returns the release. */
  register: (end: () => void) => () => void;
}): Promise<void> {
  const { res, feed, chunks, repo, actor, settings } = args;
  let cursor = args.cursor;
  let lastSent: string | null = null;
  let ended = false;
  const waker = new Waker();
  const finish = (reason?: EndReason): void => {
    if (ended) return;
    ended = true;
    waker.ring();
    if (res.destroyed) return;
    if (reason) res.write(`event: end\ndata: ${JSON.stringify({ reason, lastEventId: lastSent })}\n\n`);
    res.end();
    // A client that reads nothing never takes the last bytes: its socket goes after a grace period.
    const linger = setTimeout(() => res.destroy(), FINAL_FLUSH_MS);
    linger.unref();
    res.once('close', () => clearTimeout(linger));
  };
  const release = args.register(() => finish('server-stopping'));
  res.on('close', () => {
    ended = true;
    waker.ring();
  });
  const unwatch = feed.watch(repo, () => waker.ring());
  const heartbeat = setInterval(() => {
    // Only on an idle socket: a comment queued behind unread events would only grow the buffer.
    if (!ended && res.writableLength === 0) res.write(': heartbeat\n\n');
    // The loop looks at the key again: a revoked key's stream ends even when nothing is written.
    waker.ring();
  }, settings.heartbeatMs);
  heartbeat.unref();
  try {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      // no-transform: a proxy must neither compress nor hold the stream; X-Accel-Buffering: nginx must not buffer it.
      'Cache-Control': 'no-store, no-transform',
      'X-Accel-Buffering': 'no',
    });
    // The first bytes flush the headers at once (a client knows it is connected) and set the reconnect delay.
    res.write('retry: 2000\n: connected\n\n');
    while (!ended) {
      waker.clear();
      if (!(await args.keyValid())) {
        finish('key-revoked');
        break;
      }
      // The events of one turn go out in one socket write: one write per listener per wake-up, not per commit.
      // An idle socket (every reader that keeps up) takes the turn shared by the streams alike at its commit.
      const turn =
        res.writableLength === 0
          ? await chunks.next({ repo, actor, cursor })
          : await walkChunk({ feed, repo, actor, cursor, room: settings.bufferBytes - res.writableLength, stop: () => ended });
      // Ended meanwhile (client gone, server stopping): the turn is dropped, so `lastSent` names only what was written.
      if (ended || !turn) break;
      if (turn.bytes.length > 0) send(res, turn);
      if (turn.lastSent !== null) lastSent = turn.lastSent;
      cursor = turn.cursor;
      if (turn.full) {
        if (!(await drained(res, settings.slowReaderMs))) finish('slow-reader');
        continue;
      }
      if (turn.walked === WALK_TURN) continue;
      await waker.wait();
    }
  } finally {
    clearInterval(heartbeat);
    unwatch();
    release();
  }
}

/**
 * Writes a turn. On a chunked stream whose response holds nothing of its own (every byte it wrote is in the
 * socket's hands), it goes to the socket as one ready-framed Buffer (shared by every stream of the turn: see
 * chunkFrame): one write call and no per-stream framing; the fan-out's cost per stream is then little more
 * than the system call. Otherwise (a response not chunked, as for an HTTP/1.0 client, or one still holding
 * output) through res.write, which frames it itself. Both go to the same socket, in order.
 */
function send(res: ServerResponse, turn: EventChunk): void {
  const socket = res.socket;
  if (socket && res.headersSent && res.chunkedEncoding && res.writableLength === socket.writableLength) socket.write(chunkFrame(turn));
  else res.write(turn.bytes);
}

/**
 * True once the socket's buffer has drained, false after `ms` (or when the client went). The socket's own
 * 'drain', not the response's: a turn written straight to the socket (send) never sets the response's.
 */
function drained(res: ServerResponse, ms: number): Promise<boolean> {
  const socket = res.socket;
  if (!socket || res.destroyed) return Promise.resolve(false);
  // Nothing waits to drain (the bytes went at once): no 'drain' would come.
  if (!socket.writableNeedDrain && res.writableLength === socket.writableLength) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    const timer = setTimeout(() => done(false), ms);
    socket.on('drain', onDrain);
    res.on('close', onClose);
  });
}
