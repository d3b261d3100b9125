import type { EventChunk } from './eventChunks.js';
import type { EventStreamSettings } from './streamLimits.js';

/**
 * What crosses the IPC channel between the server process and the event fan-out process (see
 * fanOutHost.ts). Plain data, sent with Node's "advanced" serialization so that a turn's bytes go as bytes.
 */

/** What the fan-out process needs of a stream handed to it, with its socket (head already written). */
export interface OpenStream {
  type: 'open';
  id: number;
  orgId: string;
  /** The organization's head when the stream was handed over. */
  head: string | null;
  /** What decides what the key sees (seenAs): streams alike share turns. */
  view: string;
  keyId: string;
  cursor: string | null;
  chunked: boolean;
  requestId: string | undefined;
}

export type ToFanOut =
  | OpenStream
  /** End one stream (`event: end`, reason server-stopping). */
  | { type: 'end'; id: number }
  /** A batch was published on the organization's main: wake its streams. */
  | { type: 'published'; orgId: string; head: string | null }
  | { type: 'turn'; req: number; chunk: EventChunk | null; error?: string }
  | { type: 'key'; req: number; valid: boolean; error?: string }
  /** The server stops: end every stream, say `idle` once every socket is closed. */
  | { type: 'closing' }
  /** Say `settled` once the streams of clients gone by now have said `ended`. */
  | { type: 'settle'; req: number };

export type FromFanOut =
  | { type: 'ready' }
  /** The events after `cursor` for stream `id` (its organization and view), within `room` bytes. */
  | { type: 'turn'; req: number; id: number; cursor: string | null; room: number }
  /** Whether the key of open streams is still valid. */
  | { type: 'key'; req: number; keyId: string }
  | { type: 'ended'; id: number }
  | { type: 'idle' }
  | { type: 'settled'; req: number }
  | { type: 'log'; level: 'error' | 'warn' | 'info'; msg: string; fields: Record<string, unknown> };

/** How the fan-out process is started: its settings travel as its one argument. */
export function settingsArgument(settings: EventStreamSettings): string {
  return JSON.stringify(settings);
}

/** A turn as it came over the channel: the advanced serialization hands bytes back as a Uint8Array. */
export function receivedChunk(chunk: EventChunk | null): EventChunk | null {
  if (!chunk || Buffer.isBuffer(chunk.bytes)) return chunk;
  const bytes: Uint8Array = chunk.bytes;
  return { ...chunk, bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
}
