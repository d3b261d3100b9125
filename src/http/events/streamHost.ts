import type { ServerResponse } from 'node:http';
import type { EventFeed } from '../../domain/events.js';
import type { Actor } from '../../domain/keys.js';
import type { OrgRepo } from '../../storage/repo/orgRepo.js';
import { SharedChunks, walkChunk } from './eventChunks.js';
import { KeyCheck } from './keyCheck.js';
import { serveEventStream, writeStreamHead } from './sseStream.js';
import type { EventStreamSettings } from './streamLimits.js';

/** A stream the route has authorized and counted; the host writes its head and its events. */
export interface HostedStream {
  res: ServerResponse;
  repo: OrgRepo;
  actor: Actor;
  cursor: string | null;
  requestId: string | undefined;
  /** Looks the key up now: false once it is revoked. */
  keyValid: () => Promise<boolean>;
  /** Counts the stream (see EventStreams.acquire); `end` ends it early. Returns the release. */
  register: (end: () => void) => () => void;
}

/** Who writes the events of a stream once the route has started it. */
export interface StreamHost {
  /** Serves the stream; resolves once it has ended. */
  serve(stream: HostedStream): Promise<void>;
  /** Resolves once the streams of clients gone by now are released (their slots free again). */
  settle(): Promise<void>;
  /** The server stops (after every stream was told to end): lets go of what the host holds, within `graceMs`. */
  close(graceMs: number): Promise<void>;
}

/**
 * The streams written by the server process itself (createApp's default, for tests and embedding): the
 * feed walked directly. `serve` uses the fan-out process instead (fanOutHost.ts), with the same loop.
 */
export class LocalStreamHost implements StreamHost {
  private readonly chunks: SharedChunks;

  constructor(
    private readonly feed: EventFeed,
    private readonly settings: EventStreamSettings,
  ) {
    this.chunks = new SharedChunks(feed, settings.bufferBytes);
  }

  async serve(stream: HostedStream): Promise<void> {
    const { feed } = this;
    const { repo, actor } = stream;
    const key = new KeyCheck(stream.keyValid);
    await serveEventStream({
      out: await writeStreamHead(stream.res, false),
      cursor: stream.cursor,
      settings: this.settings,
      register: stream.register,
      source: {
        turn: (cursor, room, stop) => (room === null ? this.chunks.next({ repo, actor, cursor }) : walkChunk({ feed, repo, actor, cursor, room, stop })),
        keyValid: () => key.valid(),
        keyKnownValid: () => key.knownValid(),
        // Each stream woken by the feed (a few per turn of the event loop), its loop walking: wakeParked is the
        // fan-out process's, whose one message per wake-up wakes all of an organization's streams at once.
        watch: (waiter) => feed.watch(repo, () => waiter.wake()),
      },
    });
  }

  settle(): Promise<void> {
    // A gone client's stream ends here when this process reads its EOF, as any other request's would.
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
