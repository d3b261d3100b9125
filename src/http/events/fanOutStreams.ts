import type { Socket } from 'node:net';
import { paced } from '../../common/paced.js';
import { wakeGapMs } from '../../domain/events.js';
import { TurnCache, type EventChunk } from './eventChunks.js';
import { receivedChunk, type FromFanOut, type OpenStream, type ToFanOut } from './fanOutMessages.js';
import { KeyCheck } from './keyCheck.js';
import { handedSocket, serveEventStream, type StreamWaiter } from './sseStream.js';
import type { EventStreamSettings } from './streamLimits.js';
import { wakeParked } from './wakeParked.js';

/** An organization as the fan-out process knows it: its head, and the streams to wake when it moves. */
interface Org {
  head: string | null;
  waiters: Set<StreamWaiter>;
  /** Wakes the waiters, at most once per wakeGapMs of their number. */
  wake: () => void;
}

interface Pending {
  resolve: (value: ToFanOut) => void;
}

/**
 * The streams of the fan-out process (run by fanOutChild.ts): each handed-over socket is served by the same
 * loop as in the server process (serveEventStream), with turns and key checks asked of the server over the
 * channel. Streams alike at the same commit share one asked turn (TurnCache), and a key is asked about once a
 * second whatever the number of its streams: one message per view and wake-up, not per stream.
 */
export class FanOutStreams {
  private readonly orgs = new Map<string, Org>();
  private readonly turns = new TurnCache();
  private readonly keys = new Map<string, { check: KeyCheck; streams: number }>();
  private readonly enders = new Map<number, () => void>();
  private readonly sockets = new Set<Socket>();
  private readonly pending = new Map<number, Pending>();
  private nextReq = 1;
  private closing = false;

  constructor(
    private readonly settings: EventStreamSettings,
    private readonly send: (msg: FromFanOut) => void,
  ) {}

  receive(msg: ToFanOut, socket: Socket | undefined): void {
    switch (msg.type) {
      case 'open':
        return this.open(msg, socket);
      case 'end':
        return this.enders.get(msg.id)?.();
      case 'published':
        return this.published(msg.orgId, msg.head);
      case 'turn':
      case 'key': {
        const pending = this.pending.get(msg.req);
        this.pending.delete(msg.req);
        return pending?.resolve(msg);
      }
      case 'settle':
        // A client that went before the server sent this has its EOF (or reset) waiting in the kernel. Its socket may
        // have come with the message just before this one, not yet polled: its EOF is read in the next turn of the
        // event loop's poll phase (the socket destroyed then, see open), its 'close' comes in that turn's close
        // phase, and the stream's `ended` right after. `settled` is said in the check phase of the turn after that.
        // (A timer of 0 ms came a turn too early whenever a millisecond had passed: a slot seen taken, a 429.)
        afterTurns(3, () => this.send({ type: 'settled', req: msg.req }));
        return;
      case 'closing':
        this.closing = true;
        for (const end of [...this.enders.values()]) end();
        return this.idleWhenEmpty();
    }
  }

  private open(msg: OpenStream, socket: Socket | undefined): void {
    const { id } = msg;
    // The client may have gone while its socket was on the way.
    if (!socket) return this.send({ type: 'ended', id });
    this.sockets.add(socket);
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.idleWhenEmpty();
    });
    // Read (and drop) whatever the client sends, so that its going (EOF) is seen.
    socket.resume();
    // Its EOF is its going: the socket is destroyed at once, so that its 'close' (and the stream's `ended`) comes in
    // this turn of the event loop, before `settled` (see 'settle'). Left to itself, a socket first shuts its own side
    // down, which completes a turn later or more: after the timer, on a busy machine (a slot seen taken, a 429).
    socket.once('end', () => socket.destroy());
    // A reset client (EPIPE, ECONNRESET), also while an ended stream's last bytes linger: the socket goes, the
    // process stays (in the server process, the HTTP server's own handler does this).
    socket.on('error', () => socket.destroy());
    const org = this.orgOf(msg.orgId);
    org.head = msg.head;
    const key = this.keyOf(msg.keyId);
    const ask = (cursor: string | null, room: number): Promise<EventChunk | null> =>
      this.request({ type: 'turn', req: 0, id, cursor, room }).then((answer) => {
        if (answer.type !== 'turn') throw new Error(`unexpected answer ${answer.type}`);
        if (answer.error !== undefined) throw new Error(answer.error);
        return receivedChunk(answer.chunk);
      });
    void serveEventStream({
      out: handedSocket(socket, msg.chunked),
      cursor: msg.cursor,
      settings: this.settings,
      register: (end) => {
        this.enders.set(id, end);
        if (this.closing) end();
        return () => this.enders.delete(id);
      },
      source: {
        turn: (cursor, room) =>
          room === null ? this.turns.get({ place: org, head: org.head, key: `${msg.view}\n\n${cursor}`, walk: () => ask(cursor, this.settings.bufferBytes) }) : ask(cursor, room),
        keyValid: () => key.valid(),
        keyKnownValid: () => key.knownValid(),
        watch: (waiter) => {
          org.waiters.add(waiter);
          return () => org.waiters.delete(waiter);
        },
      },
    })
      .catch((err: unknown) => {
        // The status line is gone: no envelope can follow. The client sees the stream break and resumes.
        this.send({ type: 'log', level: 'error', msg: 'event stream failed', fields: { requestId: msg.requestId, error: String(err) } });
        socket.destroy();
      })
      .finally(() => {
        this.releaseKey(msg.keyId);
        this.send({ type: 'ended', id });
      });
  }

  private published(orgId: string, head: string | null): void {
    const org = this.orgOf(orgId);
    org.head = head;
    org.wake();
  }

  private orgOf(orgId: string): Org {
    let org = this.orgs.get(orgId);
    if (!org) {
      const waiters = new Set<StreamWaiter>();
      // The server tells of commits every 50 ms at most (one message); how often the streams are woken for them
      // depends on their number, which only this process knows (see wakeGapMs). A wake-up reads the head then.
      const wake = paced(
        () => wakeParked([...waiters]),
        () => wakeGapMs(waiters.size, this.settings.streamWritesPerSecond),
      );
      this.orgs.set(orgId, (org = { head: null, waiters, wake }));
    }
    return org;
  }

  /** The key's check, shared by its streams. */
  private keyOf(keyId: string): KeyCheck {
    let kept = this.keys.get(keyId);
    if (!kept) {
      const check = new KeyCheck(() => this.request({ type: 'key', req: 0, keyId }).then((answer) => {
          if (answer.type !== 'key') throw new Error(`unexpected answer ${answer.type}`);
          if (answer.error !== undefined) throw new Error(answer.error);
          return answer.valid;
        }));
      this.keys.set(keyId, (kept = { check, streams: 0 }));
    }
    kept.streams += 1;
    return kept.check;
  }

  private releaseKey(keyId: string): void {
    const kept = this.keys.get(keyId);
    if (kept && --kept.streams === 0) this.keys.delete(keyId);
  }

  private request(msg: Extract<FromFanOut, { req: number }>): Promise<ToFanOut> {
    const req = this.nextReq++;
    return new Promise((resolve) => {
      this.pending.set(req, { resolve });
      this.send({ ...msg, req });
    });
  }

  private idleWhenEmpty(): void {
    if (this.closing && this.sockets.size === 0) this.send({ type: 'idle' });
  }
}

/** Runs `fn` in the check phase (setImmediate) of the `turns`-th turn of the event loop from this one. */
function afterTurns(turns: number, fn: () => void): void {
  setImmediate(() => (turns > 1 ? afterTurns(turns - 1, fn) : fn()));
}
