/**
 * The listeners of test/bench/events.ts, in a process of their own (forked with IPC): N Server-Sent Events
 * streams that note when each event came. Apart from the process that times the PUTs, so that parsing 200
 * streams never delays the timing client's own event loop: in use, listeners are other processes too.
 *
 * Messages in: {open: {base, key, count}}, 'report', 'close'. Out: 'ready', {arrivals: number[][]}.
 * Times are wall-clock milliseconds with sub-millisecond precision (performance.timeOrigin + now()),
 * comparable across the two processes.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const now = (): number => performance.timeOrigin + performance.now();
/** Where an event starts: its `id:` line (after the previous event's blank line, or after `: connected`). */
const EVENT_ID = Buffer.from('\nid: ');
const streams: Array<{ req: http.ClientRequest; arrivals: number[] }> = [];

function listen(base: string, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const arrivals: number[] = [];
    let tail = Buffer.alloc(0);
    const req = http.get(`${base}/api/v1/knowledge/events`, { headers: { Authorization: `Bearer ${key}` } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
      // Events are counted on the raw bytes (an event's `id:` line; JSON escapes newlines, so data never holds
      // one), not parsed: 200 streams' parsing would take this process's CPU from the server on 2 cores.
      res.on('data', (chunk: Buffer) => {
        const at = now();
        const bytes = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
        for (let i = bytes.indexOf(EVENT_ID); i !== -1; i = bytes.indexOf(EVENT_ID, i + EVENT_ID.length)) arrivals.push(at);
        // A line split between two chunks is found in the next one (the tail is shorter than the marker: no double count).
        tail = Buffer.from(bytes.subarray(Math.max(0, bytes.length - (EVENT_ID.length - 1))));
      });
      res.once('data', () => {
        streams.push({ req, arrivals });
        resolve();
      });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
}

process.on('message', (message: unknown) => {
  if (message === 'report') {
    process.send?.({ arrivals: streams.map((s) => s.arrivals) });
  } else if (message === 'close') {
    streams.forEach((s) => s.req.destroy());
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
