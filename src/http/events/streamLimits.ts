import { STREAM_WRITES_PER_SECOND } from '../../domain/events.js';
import type { Actor } from '../../domain/keys.js';
import { TooManyStreams } from '../httpErrors.js';

/** The settings of GET /events (from the server's Config). */
export interface EventStreamSettings {
  /** Streams one key may hold open at once (429 past it). */
  streamsPerKey: number;
  /** Streams one organization's keys may hold open together. */
  streamsPerOrg: number;
  /** A comment line this often keeps proxies and load balancers from closing an idle stream. */
  heartbeatMs: number;
  /** Bytes a stream may have queued for a client that does not read before it waits for the client to catch up. */
  bufferBytes: number;
  /** How long a stream waits for a client that does not read before ending it (the client resumes with Last-Event-ID). */
  slowReaderMs: number;
  /**
   * The stream writes per second an organization's streams are woken for at most under a steady write load: the
   * time between two wake-ups grows with the number of streams (wakeGapMs: 50 ms to 1 s).
   */
  streamWritesPerSecond: number;
  /**
   * Who writes the streams once started: `process`, a process apart from the writer (`serve`'s default:
   * fanOutHost.ts), or `server`, the server process itself (streamHost.ts).
   */
  fanOut?: 'process' | 'server';
  /**
   * The fan-out process's priority (KNOWLEDGE_EVENT_FANOUT_PRIORITY): `idle`, Linux's SCHED_IDLE class while it
   * keeps up (fanOutScheduling.ts), or `nice`, the server's niceness +10 alone.
   */
  fanOutPriority?: 'idle' | 'nice';
}

export const EVENT_STREAM_DEFAULTS: EventStreamSettings = {
  streamsPerKey: 10,
  streamsPerOrg: 1000,
  heartbeatMs: 15_000,
  bufferBytes: 256 * 1024,
  slowReaderMs: 30_000,
  streamWritesPerSecond: STREAM_WRITES_PER_SECOND,
};

/**
 * The open event streams of this process, counted per key and per organization, and ended all at once when
 * the server stops (a stream never finishes by itself, so a graceful stop would otherwise wait it out).
 */
export class EventStreams {
  private readonly perKey = new Map<string, number>();
  private readonly perOrg = new Map<string, number>();
  private readonly open = new Set<() => void>();

  constructor(private readonly settings: Pick<EventStreamSettings, 'streamsPerKey' | 'streamsPerOrg'>) {}

  /** Counts a new stream of `actor`, or refuses it (429); `end` is called should the server stop first. Returns the release. */
  acquire(actor: Actor, end: () => void): () => void {
    const byKey = this.perKey.get(actor.keyId) ?? 0;
    const byOrg = this.perOrg.get(actor.orgId) ?? 0;
    if (byKey >= this.settings.streamsPerKey) throw new TooManyStreams({ scope: 'key', limit: this.settings.streamsPerKey });
    if (byOrg >= this.settings.streamsPerOrg) throw new TooManyStreams({ scope: 'organization', limit: this.settings.streamsPerOrg });
    this.perKey.set(actor.keyId, byKey + 1);
    this.perOrg.set(actor.orgId, byOrg + 1);
    this.open.add(end);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open.delete(end);
      decrement(this.perKey, actor.keyId);
      decrement(this.perOrg, actor.orgId);
    };
  }

  get size(): number {
    return this.open.size;
  }

  /** Ends every open stream (server stop): clients reconnect elsewhere, or later, with Last-Event-ID. */
  endAll(): void {
    for (const end of [...this.open]) end();
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
