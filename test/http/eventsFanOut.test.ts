import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { getPriority } from 'node:os';
import net from 'node:net';
import { expect } from 'chai';
import { createLogger } from '../../src/common/log.js';
import { schedulingPolicyOf } from '../../src/http/events/fanOutScheduling.js';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { ensureBuilt, killAllChildren, spawnServe } from '../support/child.js';
import { SseClient } from '../support/sse.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { head, urlOf } from './adminApi.js';
import { createKeyWithId, put, revoke } from './helpers.js';

const STARTED = 'event fan-out process started';
const RESTARTING = 'event fan-out process exited; starting it again';

/** The pids of the fan-out processes started, in order, from JSON log lines. */
function startedPids(lines: string[]): number[] {
  return lines
    .map((line) => JSON.parse(line) as { msg: string; pid?: number })
    .filter((line) => line.msg === STARTED)
    .map((line) => line.pid as number);
}

/** Whether `pid` runs (a zombie waiting for a parent to reap it has exited). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The niceness of `pid`, from /proc (Linux): the 19th field of its stat line. */
function nicenessOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** The parent of `pid`, from /proc (Linux). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Polls `done` until it holds; fails with `what` after `ms` (a bound on a wait, not a speed goal). */
async function until(what: string, done: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function open(server: TestServer, key: string, headers: Record<string, string> = {}): Promise<SseClient> {
  return SseClient.open(urlOf(server, '/events'), { Authorization: `Bearer ${key}`, ...headers });
}

describe('HTTP events: the fan-out process', function () {
  this.timeout(60_000);
  const clients: SseClient[] = [];
  const track = (client: SseClient): SseClient => (clients.push(client), client);
  let server: TestServer | undefined;

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await server?.close();
    server = undefined;
  });
  after(killAllChildren);

  it('owns the streams; when it dies they end, their slots are freed, it is started again and a resumed stream gets what it missed', async () => {
    const lines: string[] = [];
    server = await startTestServer({
      logger: createLogger({ level: 'info', write: (line) => lines.push(line) }),
      config: { eventStreams: { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 2, streamsPerOrg: 1000, heartbeatMs: 15_000, bufferBytes: 256 * 1024, slowReaderMs: 30_000 } },
    });
    const key = server.adminKey;
    const a = track(await open(server, key));
    const b = track(await open(server, key));
    await put(server, key, 'fanout/x.md', { content: 'x' });
    const x = await head(server);
    expect((await a.waitFor(1)).map((e) => e.id)).to.deep.equal([x]);
    expect((await b.waitFor(1)).map((e) => e.id)).to.deep.equal([x]);
    const [first] = startedPids(lines);
    expect(first).to.be.a('number');
    // A process of its own, started by the server (this test process here).
    expect(first).to.not.equal(process.pid);
    expect(parentOf(first as number)).to.equal(process.pid);
    // At a lower priority than the server (niceness +10, at most 19): on busy cores the writers come first.
    expect(nicenessOf(first as number)).to.equal(Math.min(19, getPriority() + 10));
    // And in Linux's idle class (fanOutScheduling.ts), set by the process itself once it has started.
    await until('the fan-out process in the idle class', async () => (await schedulingPolicyOf(first as number, (p) => readFile(p, 'utf8'))) === 'idle');

    process.kill(first as number, 'SIGKILL');
    await a.waitForEnd();
    await b.waitForEnd();
    // The streams broke (no `event: end`: nobody was left to write it); their clients resume.
    expect(a.events.map((e) => e.event)).to.deep.equal(['message']);
    await put(server, key, 'fanout/y.md', { content: 'y' });
    const y = await head(server);
    await put(server, key, 'fanout/z.md', { content: 'z' });
    const z = await head(server);
    await until('the fan-out process started again', () => startedPids(lines).length === 2);
    const second = startedPids(lines)[1] as number;
    expect(second).to.not.equal(first);
    expect(lines.some((line) => line.includes(RESTARTING))).to.equal(true);

    // Both slots of the key are free again: two streams, one resuming and one new.
    const resumed = track(await open(server, key, { 'Last-Event-ID': x }));
    const fresh = track(await open(server, key));
    expect([resumed.status, fresh.status]).to.deep.equal([200, 200]);
    expect((await resumed.waitFor(2)).map((e) => e.id)).to.deep.equal([y, z]);
    await put(server, key, 'fanout/w.md', { content: 'w' });
    const w = await head(server);
    expect((await resumed.waitFor(3)).map((e) => e.id)).to.deep.equal([y, z, w]);
    expect((await fresh.waitFor(1)).map((e) => e.id)).to.deep.equal([w]);

    // Stopping the server stops it.
    await server.close();
    server = undefined;
    expect(alive(second)).to.equal(false);
  });

  it('the server stops after its fan-out process died (no stream handed over since)', async () => {
    const lines: string[] = [];
    server = await startTestServer({ logger: createLogger({ level: 'info', write: (line) => lines.push(line) }) });
    const client = track(await open(server, server.adminKey));
    expect(client.status).to.equal(200);
    await until('the fan-out process', () => startedPids(lines).length === 1);
    process.kill(startedPids(lines)[0] as number, 'SIGKILL');
    await client.waitForEnd();
    await until('the fan-out process started again', () => startedPids(lines).length === 2);
    // What fails here is the wait: a stop that never finishes (mocha's timeout).
    await server.close();
    server = undefined;
    expect(alive(startedPids(lines)[1] as number)).to.equal(false);
  });

  it("a client that closes its streams and opens new ones at once finds its key's slots free", async () => {
    server = await startTestServer({ config: { eventStreams: { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 3, streamsPerOrg: 1000, heartbeatMs: 15_000, bufferBytes: 256 * 1024, slowReaderMs: 30_000 } } });
    const key = server.adminKey;
    let open3 = await Promise.all([1, 2, 3].map(() => open(server as TestServer, key)));
    for (let round = 0; round < 20; round++) {
      expect(open3.map((c) => c.status)).to.deep.equal([200, 200, 200]);
      // Closed here, in this process, before the next request is sent: the server must count them gone.
      for (const client of open3) client.close();
      open3 = await Promise.all([1, 2, 3].map(() => open(server as TestServer, key)));
    }
    open3.forEach(track);
    expect(open3.map((c) => c.status)).to.deep.equal([200, 200, 200]);
  });

  it('a client that resets its connection once its stream has ended does not take the fan-out process down', async () => {
    const lines: string[] = [];
    const settings = { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 10, streamsPerOrg: 1000, heartbeatMs: 200, bufferBytes: 256 * 1024, slowReaderMs: 30_000 };
    server = await startTestServer({ logger: createLogger({ level: 'info', write: (line) => lines.push(line) }), config: { eventStreams: settings } });
    const { secret, id, keys } = await createKeyWithId(server, 'reader');
    // Half-open: it does not answer the server's FIN with its own, so the reset reaches a socket still open.
    const raw = net.connect({ port: Number(new URL(server.url).port), host: '127.0.0.1', allowHalfOpen: true });
    let got = '';
    raw.setEncoding('utf8').on('data', (d: string) => (got += d));
    raw.on('error', () => undefined);
    raw.write(`GET /api/v1/knowledge/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\n\r\n`);
    await until('the stream', () => got.includes(': connected'));
    await revoke(keys, id);
    await until('the end of the stream', () => got.includes('key-revoked'));
    raw.resetAndDestroy();
    const client = track(await open(server, server.adminKey));
    await put(server, server.adminKey, 'reset/a.md', { content: 'a' });
    const a = await head(server);
    expect((await client.waitFor(1)).map((e) => e.id)).to.deep.equal([a]);
    expect(startedPids(lines)).to.have.length(1);
    expect(lines.filter((line) => line.includes(RESTARTING) || line.includes('event fan-out process failed'))).to.deep.equal([]);
  });

  it('KNOWLEDGE_EVENT_FANOUT_PRIORITY=nice: the fan-out process keeps the normal class, at niceness +10', async () => {
    const lines: string[] = [];
    const settings = { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 10, streamsPerOrg: 1000, heartbeatMs: 15_000, bufferBytes: 256 * 1024, slowReaderMs: 30_000 };
    server = await startTestServer({ logger: createLogger({ level: 'info', write: (line) => lines.push(line) }), config: { eventStreams: { ...settings, fanOutPriority: 'nice' } } });
    const client = track(await open(server, server.adminKey));
    await put(server, server.adminKey, 'nice/a.md', { content: 'a' });
    expect(await client.waitFor(1)).to.have.length(1);
    const [pid] = startedPids(lines);
    // Given the time the idle class takes to be set with the default (above: polled, at most a few ms).
    await new Promise((r) => setTimeout(r, 500));
    expect(await schedulingPolicyOf(pid as number, (p) => readFile(p, 'utf8'))).to.equal('normal');
    expect(nicenessOf(pid as number)).to.equal(Math.min(19, getPriority() + 10));
  });

  it('KNOWLEDGE_EVENT_FANOUT=server: the same loop in the server process, and the connection is kept after the stream', async () => {
    const lines: string[] = [];
    const settings = { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 10, streamsPerOrg: 1000, heartbeatMs: 15_000, bufferBytes: 256 * 1024, slowReaderMs: 30_000 };
    server = await startTestServer({ logger: createLogger({ level: 'info', write: (line) => lines.push(line) }), config: { eventStreams: { ...settings, fanOut: 'server' } } });
    const key = server.adminKey;
    const client = track(await open(server, key));
    // A socket that stays in this process may serve another request once the stream ends; a handed-over one may not.
    expect(client.headers.connection).to.equal('keep-alive');
    await put(server, key, 'inproc/a.md', { content: 'a' });
    const a = await head(server);
    expect((await client.waitFor(1)).map((e) => e.id)).to.deep.equal([a]);
    expect(startedPids(lines)).to.deep.equal([]);
  });

  it('a handed-over stream says Connection: close (its socket never comes back to serve another request)', async () => {
    server = await startTestServer();
    const client = track(await open(server, server.adminKey));
    expect(client.status).to.equal(200);
    expect(client.headers.connection).to.equal('close');
  });

  describe('with the built server', function () {
    before(ensureBuilt);

    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      it(`leaves no fan-out process behind when the server gets ${signal}`, async () => {
        const tmp = await tmpDir('ks-fanout');
        try {
          const serve = await spawnServe(tmp.dir, 15_000, { LOG_LEVEL: 'info' });
          const client = track(await SseClient.open(`${serve.url}/api/v1/knowledge/events`, { Authorization: `Bearer ${serve.adminKey as string}` }));
          expect(client.status).to.equal(200);
          await until('the fan-out process', () => startedPids(jsonLines(serve.stderr())).length === 1);
          const child = startedPids(jsonLines(serve.stderr()))[0] as number;
          expect(parentOf(child)).to.equal(serve.pid);
          await serve.kill(signal);
          await until(`the fan-out process gone after ${signal}`, () => !alive(child));
          await client.waitForEnd();
        } finally {
          await tmp.cleanup();
        }
      });
    }
  });
});

/** The JSON lines of a log (anything else, such as a stack trace, left out). */
function jsonLines(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('{'));
}
