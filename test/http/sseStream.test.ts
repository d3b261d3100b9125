import net from 'node:net';
import { expect } from 'chai';
import type { EventChunk } from '../../src/http/events/eventChunks.js';
import { handedSocket, serveEventStream, type StreamSource } from '../../src/http/events/sseStream.js';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { collected } from '../support/collect.js';

/** A connected pair on loopback: the server's end (what a stream writes) and the client's. */
async function socketPair(): Promise<{ server: net.Socket; client: net.Socket; close: () => void }> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1');
  const server = await accepted;
  return { server, client, close: () => listener.close() };
}

/** A source whose every wake-up has one new commit; notes each turn it gave (weakly) and how many. */
function oneCommitPerWake(): { source: StreamSource; wake: () => void; turns: Array<WeakRef<EventChunk>>; asked: () => number } {
  const turns: Array<WeakRef<EventChunk>> = [];
  let woken: () => void = () => undefined;
  const source: StreamSource = {
    turn: (cursor) => {
      const n = turns.length + 1;
      const chunk: EventChunk = { bytes: Buffer.from(`id: c${n}\ndata: {"n":${n},"after":"${cursor}"}\n\n`), lastSent: `c${n}`, cursor: `c${n}`, walked: 1, full: false };
      turns.push(new WeakRef(chunk));
      return Promise.resolve(chunk);
    },
    keyValid: () => Promise.resolve(true),
    watch: (wake) => {
      woken = wake;
      return () => undefined;
    },
  };
  return { source, wake: () => woken(), turns, asked: () => turns.length };
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setImmediate(resolve));
}

describe('serveEventStream: what a stream holds while it lives', () => {
  it('keeps none of the turns it has written (memory per stream stays bounded however long it lives)', async () => {
    const { server, client, close } = await socketPair();
    let received = '';
    client.on('data', (bytes: Buffer) => (received += bytes.toString()));
    const { source, wake, turns, asked } = oneCommitPerWake();
    const serving = serveEventStream({ out: handedSocket(server, true), source, cursor: 'c0', settings: EVENT_STREAM_DEFAULTS, register: () => () => undefined });
    await until(() => asked() === 1);
    for (let n = 2; n <= 5; n++) {
      wake();
      await until(() => asked() === n);
    }
    await until(() => received.includes('id: c5\n'));
    // The stream is still open and waiting for the next commit: what it wrote before is garbage by now.
    for (const turn of turns.slice(0, 4)) expect(await collected(turn)).to.equal(true);
    client.destroy();
    await serving;
    close();
  });
});
