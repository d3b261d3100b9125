import { expect } from 'chai';
import { performance } from 'node:perf_hooks';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { wakeGapMs } from '../../src/domain/events.js';
import { WALK_TURN } from '../../src/http/events/eventChunks.js';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { SseClient } from '../support/sse.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { urlOf } from './adminApi.js';
import { put } from './helpers.js';

const STREAMS = 5;
/** 5 streams at 10 writes a second: a wake-up every 500 ms, ten times the 50 ms of a few streams at the default. */
const WRITES_PER_SECOND = 10;
const GAP_MS = wakeGapMs(STREAMS, WRITES_PER_SECOND);

/**
 * Under a steady write load an organization's streams are woken once per wakeGapMs of their number, each
 * wake-up writing every commit published since in one chunk: a stream's chunks are counted (each arrives as
 * one 'data' of the parsed body, also when several share a read), and must be no more than the wake-ups the
 * time allowed, while every commit still arrives, once, in order.
 */
describe('HTTP events: wake-ups paced by the number of streams', function () {
  this.timeout(60_000);
  let server: TestServer | undefined;
  const clients: SseClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await server?.close();
    server = undefined;
  });

  it('KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND sets the rate (1,000 unless set); a bad value stops the start with a message', () => {
    expect(loadConfig({}).eventStreams.streamWritesPerSecond).to.equal(1000);
    expect(loadConfig({ KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND: '4000' }).eventStreams.streamWritesPerSecond).to.equal(4000);
    for (const bad of ['0', 'fast', '1.5', '-10']) {
      expect(() => loadConfig({ KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND: bad }), bad).to.throw(ConfigError, /KNOWLEDGE_EVENT_STREAM_WRITES_PER_SECOND must be an integer from 10 to 10000000/);
    }
  });

  for (const fanOut of ['process', 'server'] as const) {
    it(`${fanOut === 'process' ? 'the fan-out process' : 'KNOWLEDGE_EVENT_FANOUT=server'}: a steady writer's commits reach each stream in one chunk per gap`, async () => {
      expect(GAP_MS).to.equal(500);
      server = await startTestServer({ config: { eventStreams: { ...EVENT_STREAM_DEFAULTS, streamsPerKey: STREAMS, streamWritesPerSecond: WRITES_PER_SECOND, fanOut } } });
      const key = server.adminKey;
      const chunks: number[] = [];
      for (let i = 0; i < STREAMS; i++) {
        const client = await SseClient.open(urlOf(server, '/events'), { Authorization: `Bearer ${key}` });
        clients.push(client);
        chunks.push(0);
        client.res?.on('data', () => (chunks[i] = (chunks[i] as number) + 1));
      }
      // Every stream at the head, and the last wake-up a gap old: the first commit of the steady run goes out at once.
      expect((await put(server, key, 'paced/first.md', { content: 'first' })).status).to.equal(200);
      await Promise.all(clients.map((c) => c.waitFor(1)));
      await new Promise((r) => setTimeout(r, GAP_MS));
      chunks.fill(0);
      const started = performance.now();
      let commits = 0;
      while (performance.now() - started < 3 * GAP_MS) {
        expect((await put(server, key, `paced/item-${commits % 10}.md`, { content: `version ${commits}` })).status).to.equal(200);
        commits += 1;
        // Fewer commits per gap than a turn walks (WALK_TURN, 64): each wake-up is then one chunk.
        await new Promise((r) => setTimeout(r, 15));
      }
      await Promise.all(clients.map((c) => c.waitFor(1 + commits)));
      const elapsed = performance.now() - started;
      // Without pacing by the streams' number (a wake-up per 50 ms) each stream would get about one chunk per commit here.
      expect(commits, 'commits enough to tell the gaps apart').to.be.greaterThan(8);
      expect(commits / Math.max(1, Math.floor(elapsed / GAP_MS)), 'commits per gap').to.be.below(WALK_TURN);
      const allowed = Math.floor(elapsed / GAP_MS) + 1;
      for (const [i, n] of chunks.entries()) expect(n, `stream ${i}: ${n} chunks for ${commits} commits in ${elapsed.toFixed(0)} ms`).to.be.within(1, allowed);
      for (const client of clients) {
        const ids = client.events.map((e) => e.id);
        expect(new Set(ids).size, 'each commit once').to.equal(ids.length);
      }
      expect(new Set(clients.map((c) => c.events.map((e) => e.id).join()))).to.have.length(1, 'every stream the same commits in the same order');
    });
  }
});
