/**
 * The listeners of test/bench/events.ts, in a process of their own (forked with IPC): N Server-Sent Events
 * streams that note each event's id and when it came. Apart from the process that times the PUTs, so that
 * reading 200 streams never delays the timing client's own event loop: in use, listeners are other processes too.
 *
 * Each stream is a raw TCP connection (net, not http.get): the request is written by hand, the answer's status
 * line and `Transfer-Encoding: chunked` are checked, the chunks are unframed here, and the events are split on
 * their blank line. Every event's id is kept, so the bench checks that each listener got every commit, once, in
 * commit order. It stands for clients on other machines; http.get's parser and streams cost this process about
 * as much CPU as the server's fan-out, on the same 2 cores as the server. Its sockets read through `onread` (one
 * buffer for all, each read copied out): while the PUTs ran, this process took 0.12 ms of CPU per PUT so,
 * against 0.25 ms with each socket's 'data' events (6-round runs in turn, 2026-12-02).
 *
 * Messages in: {open: {base, key, count}}, 'report', 'close'. Out: 'ready', {ids: string[][], arrivals: number[][]}.
 * Times are wall-clock milliseconds with sub-millisecond precision (performance.timeOrigin + now()),
 * comparable across the two processes.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { SseBytes } from './sseBytes.js';

const now = (): number => performance.timeOrigin + performance.now();
/**
 * `LISTENERS_PARSE=live` parses each read as it comes. By default a stream, once started, only keeps its reads
 * (the Buffer and when it came) and parses them when asked for a report, after the timed PUTs: then what the 200
 * listeners cost this machine while the PUTs are timed is what clients on other machines would leave on it (the
 * kernel's delivery and one read call per chunk), not their parsing of every event (~3 µs each, 200 events per
 * commit, in bursts of a wake-up's commits). The ids and their arrival times come out the same either way.
 */
const LIVE = process.env.LISTENERS_PARSE === 'live';
/** The one buffer every stream reads into (onread): each read is copied out of it before the next can come. */
const READ_BUFFER = Buffer.alloc(64 * 1024);
const streams: Array<{ socket: net.Socket; reader: SseBytes; reads: Array<{ bytes: Buffer; at: number }> }> = [];

function listen(base: string, key: string): Promise<void> {
  const url = new URL(`${base}/api/v1/knowledge/events`);
  return new Promise((resolve, reject) => {
    const reads: Array<{ bytes: Buffer; at: number }> = [];
    const reader = new SseBytes(() => {
      streams.push({ socket, reader, reads });
      resolve();
    });
    const onBytes = (bytes: Buffer): void => {
      if (!LIVE && reader.started) return void reads.push({ bytes, at: now() });
      try {
        reader.push(bytes, now());
      } catch (err) {
        reject(err as Error);
        socket.destroy();
      }
    };
    // Read into one buffer of this process's (onread), copied out at the length read: no stream machinery, no
    // 'data' event, no buffer the socket allocates per read. What a read costs this process is then little more
    // than the kernel's delivery and the read call, the part a client elsewhere would leave on this machine.
    const socket = net.connect({
      port: Number(url.port),
      host: url.hostname,
      onread: {
        buffer: READ_BUFFER,
        callback: (length: number, buffer: Uint8Array): boolean => {
          onBytes(Buffer.from(buffer.subarray(0, length)));
          return true; // go on reading
        },
      },
    });
    socket.on('connect', () => {
      socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    socket.on('error', (err) => (socket.destroyed && reader.started ? undefined : reject(err)));
  });
}

process.on('message', (message: unknown) => {
  if (message === 'report') {
    for (const s of streams) {
      // Thrown here (a bad answer): the process fails, and the bench with it.
      for (const read of s.reads) s.reader.push(read.bytes, read.at);
      s.reads.length = 0;
    }
    process.send?.({ ids: streams.map((s) => s.reader.ids), arrivals: streams.map((s) => s.reader.arrivals) });
  } else if (message === 'close') {
    streams.forEach((s) => s.socket.destroy());
    process.disconnect();
  } else if (typeof message === 'object' && message !== null && 'open' in message) {
    const { base, key, count } = (message as { open: { base: string; key: string; count: number } }).open;
    Promise.all(Array.from({ length: count }, () => listen(base, key))).then(
      () => process.send?.('ready'),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  }
});
