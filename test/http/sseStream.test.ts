import net from 'node:net';
import { expect } from 'chai';
import type { EventChunk } from '../../src/http/events/eventChunks.js';
import { handedSocket, serveEventStream, type StreamSource, type StreamWaiter } from '../../src/http/events/sseStream.js';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { wakeParked } from '../../src/http/events/wakeParked.js';
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

/**
 * A source whose every turn has one new commit after the cursor it is asked at (turns at one cursor are shared,
 * as TurnCache shares them); notes each turn it made (weakly), the turns and key checks asked, and its waiters.
 */
function oneCommitPerTurn(keyKnownValid = false): { source: StreamSource; waiters: StreamWaiter[]; turns: Array<WeakRef<EventChunk>>; asked: () => number; keyChecks: () => number } {
  const turns: Array<WeakRef<EventChunk>> = [];
  const shared = new Map<string | null, Promise<EventChunk>>();
  const waiters: StreamWaiter[] = [];
  let asked = 0;
  let keyChecks = 0;
  const source: StreamSource = {
    turn: (cursor) => {
      asked++;
      let turn = shared.get(cursor);
      if (!turn) {
        // Only the newest turn is kept, as TurnCache drops an old head's.
        shared.clear();
        const n = Number(cursor?.slice(1)) + 1;
        const chunk: EventChunk = { bytes: Buffer.from(`id: c${n}\ndata: {"n":${n}}\n\n`), lastSent: `c${n}`, cursor: `c${n}`, walked: 1, full: false };
        turns.push(new WeakRef(chunk));
        shared.set(cursor, (turn = Promise.resolve(chunk)));
      }
      return turn;
    },
    keyValid: () => {
      keyChecks++;
      return Promise.resolve(true);
    },
    keyKnownValid: () => keyKnownValid,
    watch: (waiter) => {
      waiters.push(waiter);
      return () => undefined;
    },
  };
  return { source, waiters, turns, asked: () => asked, keyChecks: () => keyChecks };
}

/** A stream served over a loopback pair, with what its client received. */
async function openStream(source: StreamSource): Promise<{ received: () => string; close: () => Promise<void> }> {
  const { server, client, close } = await socketPair();
  let received = '';
  client.on('data', (bytes: Buffer) => (received += bytes.toString()));
  const serving = serveEventStream({ out: handedSocket(server, true), source, cursor: 'c0', settings: EVENT_STREAM_DEFAULTS, register: () => () => undefined });
  return {
    received: () => received,
    close: async () => {
      client.destroy();
      await serving;
      close();
    },
  };
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setImmediate(resolve));
}

describe('serveEventStream: what a stream holds while it lives', () => {
  it('keeps none of the turns it has written (memory per stream stays bounded however long it lives)', async () => {
    const { source, waiters, turns, asked } = oneCommitPerTurn();
    const stream = await openStream(source);
    await until(() => asked() === 1);
    for (let n = 2; n <= 5; n++) {
      waiters[0]?.wake();
      await until(() => asked() === n);
    }
    await until(() => stream.received().includes('id: c5\n'));
    // The stream is still open and waiting for the next commit: what it wrote before is garbage by now.
    for (const turn of turns.slice(0, 4)) expect(await collected(turn)).to.equal(true);
    await stream.close();
  });
});

describe('wakeParked: streams parked alike take a wake-up together', () => {
  it('writes the one shared turn to every parked stream without running their loops (no key check, one turn each)', async () => {
    const { source, waiters, asked, keyChecks } = oneCommitPerTurn(true);
    const streams = [await openStream(source), await openStream(source), await openStream(source)];
    await until(() => streams.every((s) => s.received().includes('id: c1\n')));
    const before = { asked: asked(), keyChecks: keyChecks() };
    wakeParked(waiters);
    await until(() => streams.every((s) => s.received().includes('id: c2\n')));
    wakeParked(waiters);
    await until(() => streams.every((s) => s.received().includes('id: c3\n')));
    // Each stream asked for the turn at its commit (one shared promise), and nothing else: its loop never ran.
    expect({ asked: asked() - before.asked, keyChecks: keyChecks() - before.keyChecks }).to.deep.equal({ asked: 6, keyChecks: 0 });
    for (const s of streams) expect(s.received().match(/^id: /gm)).to.have.length(3);
    await Promise.all(streams.map((s) => s.close()));
  });

  it('wakes the loop of a stream whose key is due for a check: it checks, then takes its turn', async () => {
    const { source, waiters, keyChecks } = oneCommitPerTurn(false);
    const stream = await openStream(source);
    await until(() => stream.received().includes('id: c1\n'));
    const checks = keyChecks();
    wakeParked(waiters);
    await until(() => stream.received().includes('id: c2\n'));
    expect(keyChecks()).to.equal(checks + 1);
    await stream.close();
  });

  it('a turn taken at another commit than where the stream stands is refused, and the stream woken instead', async () => {
    const { source, waiters } = oneCommitPerTurn(true);
    const stream = await openStream(source);
    await until(() => stream.received().includes('id: c1\n'));
    const waiter = waiters[0] as StreamWaiter;
    const stale: EventChunk = { bytes: Buffer.from('id: c9\ndata: {}\n\n'), lastSent: 'c9', cursor: 'c9', walked: 1, full: false };
    expect(waiter.take(stale, 'c0')).to.equal(false);
    expect(waiter.parked()?.at).to.equal('c1');
    expect(waiter.take({ ...stale, full: true }, 'c1')).to.equal(false);
    expect(stream.received()).to.not.include('c9');
    await stream.close();
  });
});
