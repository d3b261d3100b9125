import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What the receiver answered: a status, or `hang` (no answer: the sender times out). */
  answer: number | 'hang';
  at: number;
}

/**
 * A webhook receiver on 127.0.0.1: each request is answered by the next scripted answer (a status, or
 * `hang` to never answer), then by `otherwise` once the script is used up.
 */
export class Receiver {
  readonly received: Received[] = [];
  script: Array<number | 'hang'> = [];
  otherwise: number | 'hang' = 200;
  private readonly hanging = new Set<http.ServerResponse>();
  private waiters: Array<() => void> = [];

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    const receiver = new Receiver(server);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const answer = receiver.script.shift() ?? receiver.otherwise;
        receiver.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answer, at: Date.now() });
        receiver.notify();
        if (answer === 'hang') receiver.hanging.add(res);
        else res.writeHead(answer, { 'Content-Type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** The requests answered 2xx, in the order they came. */
  get delivered(): Received[] {
    return this.received.filter((r) => typeof r.answer === 'number' && r.answer >= 200 && r.answer < 300);
  }

  async waitFor(done: () => boolean, ms = 15_000, what = 'the receiver'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: got ${this.received.length} requests`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  async close(): Promise<void> {
    this.hanging.forEach((res) => res.destroy());
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }
}
