import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/common/log.js';
import { Slots } from '../../src/common/slots.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { FILES, upload } from './fileHelpers.js';

const MIB = 1024 * 1024;

describe('common/Slots with weights', () => {
  it('serves waiters in arrival order: a heavy task is not overtaken by light ones behind it', async () => {
    const slots = new Slots(10);
    const first = await slots.acquire(6);
    const order: string[] = [];
    const heavy = slots.acquire(8).then((release) => (order.push('heavy'), release));
    const light = slots.acquire(1).then((release) => (order.push('light'), release));
    await new Promise((r) => setImmediate(r));
    // 4 units are free, enough for the light task: it still waits behind the heavy one.
    expect(order).to.deep.equal([]);
    expect(slots.queued).to.equal(2);
    first();
    (await heavy)();
    (await light)();
    expect(order).to.deep.equal(['heavy', 'light']);
    expect(slots.held).to.equal(0);
  });

  it('runs a task heavier than the whole budget alone, and a release called twice frees once', async () => {
    const slots = new Slots(10);
    const huge = await slots.acquire(50);
    expect(slots.held).to.equal(10);
    let started = false;
    const next = slots.acquire(1).then((release) => ((started = true), release));
    await new Promise((r) => setImmediate(r));
    expect(started).to.equal(false);
    huge();
    huge();
    (await next)();
    expect(slots.held).to.equal(0);
  });
});

describe('KNOWLEDGE_DOWNLOAD_MEMORY_MB', () => {
  it('is 256 MiB unless set, in MiB, and a value that is not a positive whole number stops the start', () => {
    expect(loadConfig({}).fileDownloads.memoryBytes).to.equal(256 * MIB);
    expect(loadConfig({ KNOWLEDGE_DOWNLOAD_MEMORY_MB: '64' }).fileDownloads.memoryBytes).to.equal(64 * MIB);
    for (const bad of ['0', '-1', '1.5', 'lots']) {
      expect(() => loadConfig({ KNOWLEDGE_DOWNLOAD_MEMORY_MB: bad }), bad).to.throw(ConfigError, /KNOWLEDGE_DOWNLOAD_MEMORY_MB/);
    }
  });
});

/**
 * GET /files holds a file's bytes in memory while it sends them: all downloads together stay within the
 * budget, and a client that stops reading is cut off, so it cannot hold its share for ever.
 */
describe('HTTP GET /files: the memory downloads hold', function () {
  this.timeout(60_000);
  // Larger than the loopback socket buffers (a few MiB each way), so a client that reads nothing holds its download open.
  const SIZE = 16 * MIB;
  let server: TestServer;
  let key: string;
  const a = Buffer.alloc(SIZE, 'a');
  const b = Buffer.alloc(SIZE, 'b');
  interface AccessLine { msg: string; route?: string; status?: number; requestId?: string }
  const accessLines: AccessLine[] = [];

  before(async () => {
    const logger = createLogger({ level: 'info', write: (line) => accessLines.push(JSON.parse(line) as AccessLine) });
    server = await startTestServer({ config: { maxFileBytes: 32 * MIB, fileDownloads: { memoryBytes: 20 * MIB, stallMs: 1_500 } }, logger });
    key = await server.key('writer');
    expect((await upload(server, key, 'big/a.txt', a, 'text/plain')).status).to.equal(200);
    expect((await upload(server, key, 'big/b.txt', b, 'text/plain')).status).to.equal(200);
  });
  after(() => server?.close());

  /**
   * A GET of `path` from a client that reads nothing of the answer until `drain` is called, which then
   * reads what is left and tells how many bytes came before the connection ended.
   */
  function stalled(path: string): { socket: Socket; drain: () => Promise<number> } {
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`GET ${FILES}/${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    socket.pause();
    // A paused socket never reports the server's close: only once its data is read does it see the end.
    const drain = (): Promise<number> =>
      new Promise((resolve) => {
        let bytes = 0;
        socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
        socket.once('close', () => resolve(bytes));
        socket.resume();
      });
    return { socket, drain };
  }

  async function download(path: string): Promise<Buffer> {
    const res = await fetch(`${server.url}${FILES}/${path}`, { headers: { Authorization: `Bearer ${key}` } });
    expect(res.status).to.equal(200);
    return Buffer.from(await res.arrayBuffer());
  }

  it('makes a download wait while a stalled one holds the memory, and cuts the stalled one off after stallMs', async () => {
    const holder = stalled('big/a.txt');
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    // 16 MiB held of 20: the second download waits until the first is cut off (1.5 s without progress).
    expect((await download('big/b.txt')).equals(b)).to.equal(true);
    expect(Date.now() - started).to.be.at.least(1_000);
    // The stalled client got part of its answer, then the connection ended.
    expect(await holder.drain()).to.be.below(SIZE);
  });

  it('gives back the room of a download whose client left while it waited', async () => {
    const holder = stalled('big/a.txt');
    await new Promise((r) => setTimeout(r, 200));
    // Queued behind the holder, then gone before its turn.
    const leaver = stalled('big/b.txt');
    await new Promise((r) => setTimeout(r, 200));
    const linesBefore = accessLines.length;
    leaver.socket.destroy();
    // Once the holder is cut off, both shares are back: a leaked one would leave these waiting for the test's timeout.
    expect((await download('big/a.txt')).equals(a)).to.equal(true);
    expect((await download('big/b.txt')).equals(b)).to.equal(true);
    expect(await holder.drain()).to.be.below(SIZE);
    // The leaver's access line says the client left (499), not Koa's default 404 for an answer never given. (The
    // holder's line, a 200, was written before: it had its room at once.)
    const statuses = accessLines.slice(linesBefore).filter((line) => line.msg === 'request').map((line) => line.status);
    expect(statuses.sort()).to.deep.equal([200, 200, 499]);
  });

  it('answers a conditional GET with 304 without waiting for room', async () => {
    const first = await fetch(`${server.url}${FILES}/big/a.txt`, { method: 'GET', headers: { Authorization: `Bearer ${key}` } });
    const etag = first.headers.get('ETag') ?? '';
    await first.arrayBuffer();
    const holder = stalled('big/b.txt');
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    const res = await fetch(`${server.url}${FILES}/big/a.txt`, { headers: { Authorization: `Bearer ${key}`, 'If-None-Match': etag } });
    expect(res.status).to.equal(304);
    expect(Date.now() - started).to.be.below(1_000);
    holder.socket.destroy();
  });
});
