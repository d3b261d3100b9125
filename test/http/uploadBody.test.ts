import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import { createLogger } from '../../src/common/log.js';
import { Slots } from '../../src/common/slots.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { FILES, upload } from './fileHelpers.js';

/** The uploads held in memory at once: the rest wait, in order, before their bodies are read. */
describe('common/Slots', () => {
  it('runs at most `size` at once; the next starts when one ends, in arrival order', async () => {
    const slots = new Slots(2);
    const started: number[] = [];
    const finish: Array<() => void> = [];
    const runs = [0, 1, 2, 3].map((i) =>
      slots.run(async () => {
        started.push(i);
        await new Promise<void>((resolve) => finish.push(resolve));
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal([0, 1]);
    expect(slots.queued).to.equal(2);
    finish[0]?.();
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal([0, 1, 2]);
    finish[1]?.();
    finish[2]?.();
    await new Promise((r) => setImmediate(r));
    finish[3]?.();
    expect(await Promise.all(runs)).to.deep.equal([0, 1, 2, 3]);
    expect(slots.queued).to.equal(0);
  });

  it('frees the slot when the upload fails', async () => {
    const slots = new Slots(1);
    await slots.run(() => Promise.reject(new Error('refused'))).catch(() => undefined);
    expect(await slots.run(() => Promise.resolve('next'))).to.equal('next');
  });
});

/** Over real HTTP: an upload whose client left while it waited for a slot must give the slot back. */
describe('HTTP PUT /files: uploads abandoned while queued', function () {
  // Without the fix the last upload waits forever for a slot: the test's timeout is the failure.
  this.timeout(20_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ logger: createLogger({ level: 'error' }) });
  });
  after(() => server?.close());

  it('frees their slots: after as many abandoned uploads as there are slots, an upload still goes through', async () => {
    const writer = await server.key('writer');
    const port = Number(new URL(server.url).port);
    // A body announced as 1,000 bytes of which 3 come: the upload holds its slot, reading, until the socket goes.
    const slow = (): Socket => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(`PUT ${FILES}/q/slow-${Math.random()}.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${writer}\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nabc`);
      return socket;
    };
    const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
    const slots = 2 * availableParallelism();
    for (let round = 0; round < slots; round++) {
      const holders = Array.from({ length: slots }, slow);
      await pause(200);
      const queued = slow();
      await pause(200);
      queued.destroy(); // gone while waiting for a slot
      await pause(100);
      holders.forEach((h) => h.destroy());
      await pause(200);
    }
    const res = await upload(server, writer, 'q/after.txt', Buffer.from('hello\n'), 'text/plain');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });
});
