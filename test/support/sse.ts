import http from 'node:http';

/** One Server-Sent Event as a client parses it (comments are counted apart). */
export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * A raw SSE client over node's http (no library between the test and the wire): it parses events as
 * the EventSource spec does, keeps them in order, and can wait for the n-th one or for the end.
 */
export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  /** The body when the answer was not a stream (a JSON refusal). */
  body = '';
  ended = false;
  private buffer = '';
  private waiters: Array<() => void> = [];
  private req: http.ClientRequest | undefined;
  res: http.IncomingMessage | undefined;

  private constructor() {}

  /**
   * Connects and resolves once the status line is in. `paused`: the body is read no further than Node's own
   * small buffer until `res.resume()` (a client that stops reading at once: its socket's receive buffer never
   * grows, as Linux grows it only for a reader that keeps up).
   */
  static open(url: string, headers: Record<string, string> = {}, options: { paused?: boolean } = {}): Promise<SseClient> {
    const client = new SseClient();
    return new Promise((resolve, reject) => {
      const req = http.get(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
        if (options.paused) res.pause();
        client.res = res;
        client.status = res.statusCode ?? 0;
        client.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => client.feed(chunk));
        res.on('end', () => client.finish());
        res.on('error', () => client.finish());
        res.on('close', () => client.finish());
        resolve(client);
      });
      client.req = req;
      req.on('error', reject);
    });
  }

  /** Resolves once `n` events have arrived (rejects after `ms`, or when the stream ends short of them). */
  async waitFor(n: number, ms = 10_000): Promise<SseEvent[]> {
    await this.until(() => this.events.length >= n || this.ended, ms, `${n} events (have ${this.events.length})`);
    if (this.events.length < n) throw new Error(`stream ended after ${this.events.length} events, expected ${n}`);
    return this.events.slice(0, n);
  }

  waitForEnd(ms = 10_000): Promise<void> {
    return this.until(() => this.ended, ms, 'the end of the stream');
  }

  /** Data events (not `event: end`), their data parsed. */
  commits<T = { commitId: string; changes: Array<{ path: string; change: string; id: string; commitId: string }> }>(): Array<{ id: string; data: T }> {
    return this.events.filter((e) => e.event === 'message').map((e) => ({ id: e.id as string, data: JSON.parse(e.data) as T }));
  }

  close(): void {
    this.req?.destroy();
    this.finish();
  }

  private until(done: () => boolean, ms: number, what: string): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      const check = (): void => {
        if (!done()) return void this.waiters.push(check);
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push(check);
    });
  }

  private notify(): void {
    const waiting = this.waiters;
    this.waiters = [];
    waiting.forEach((w) => w());
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.notify();
  }

  private feed(chunk: string): void {
    if (!String(this.headers['content-type']).startsWith('text/event-stream')) {
      this.body += chunk;
      return;
    }
    this.buffer += chunk;
    let at: number;
    while ((at = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, at);
      this.buffer = this.buffer.slice(at + 2);
      const event: SseEvent = { id: undefined, event: 'message', data: '' };
      let hasData = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments++;
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'event') event.event = value;
        else if (field === 'data') {
          event.data = hasData ? `${event.data}\n${value}` : value;
          hasData = true;
        }
      }
      if (hasData) this.events.push(event);
    }
    this.notify();
  }
}
