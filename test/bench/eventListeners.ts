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
const streams: Array<{ req: http.ClientRequest; arrivals: number[] }> = [];

function listen(base: string, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const arrivals: number[] = [];
    let tail = '';
    const req = http.get(`${base}/api/v1/knowledge/events`, { headers: { Authorization: `Bearer ${key}` } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = now();
        const lines = (tail + chunk).split('\n');
        tail = lines.pop() as string;
        for (const line of lines) if (line.startsWith('id: ')) arrivals.push(at);
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
