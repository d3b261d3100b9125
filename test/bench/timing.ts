import http from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * Single timed requests (lists, history, startup), from the bench process over
 * a keep-alive connection: when the headers came, when the first body byte
 * came, when the last did. A list that streams shows a first byte long before
 * its last; a buffered one shows them together.
 */
export interface Timed {
  status: number;
  headersMs: number;
  firstByteMs: number;
  totalMs: number;
  bytes: number;
  /** Transfer-Encoding: chunked (no Content-Length): the server did not know the length when it started. */
  chunked: boolean;
  body: Buffer;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

export function timedGet(url: string, key: string, options: { keepBody?: boolean } = {}): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      const headersMs = performance.now() - start;
      let firstByteMs = -1;
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        if (firstByteMs < 0) firstByteMs = performance.now() - start;
        bytes += chunk.length;
        if (options.keepBody !== false) chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headersMs,
          firstByteMs: firstByteMs < 0 ? headersMs : firstByteMs,
          totalMs: performance.now() - start,
          bytes,
          chunked: /chunked/i.test(String(res.headers['transfer-encoding'] ?? '')) && res.headers['content-length'] === undefined,
          body: Buffer.concat(chunks),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** Closes the kept-alive sockets (before a server under test is stopped). */
export function closeConnections(): void {
  agent.destroy();
}

export interface Stats {
  n: number;
  median: number;
  p95: number;
  min: number;
  max: number;
}

/** The sample at fraction `p` of `sorted` (ascending), by index `floor(n·p)`: p99, max (p = 1) and the like. */
export function sampleAt(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

export function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  return { n: s.length, median: at(0.5), p95: at(0.95), min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN };
}

/** JSON body of a timed answer, or a clear error. */
export function jsonOf<T>(t: Timed, what: string): T {
  try {
    return JSON.parse(t.body.toString('utf8')) as T;
  } catch {
    throw new Error(`${what}: answer is not JSON (status ${t.status}): ${t.body.toString('utf8').slice(0, 300)}`);
  }
}
