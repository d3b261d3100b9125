/**
 * The fan-out process's own cost per stream write, apart from the server, the listeners and the IPC channel:
 * FanOutStreams (the fan-out process's streams, as fanOutChild.ts runs them) in this process, given N handed-over
 * sockets whose other ends a child process reads, and W wake-ups (`published`) 10 ms apart, each answered with a
 * turn of 6 events (~2 KB) as the server would answer it. Prints this process's CPU per stream write (user and
 * kernel, from process.cpuUsage), alternating rounds of this build and of another one (KNOWLEDGE_STORE_CLI, as the
 * other benches), so that the machine's load falls on both alike.
 *
 * Run with `npm run build && KNOWLEDGE_STORE_CLI=<other checkout>/dist/src/cli/main.js npx tsx test/bench/fanOutWrites.ts [rounds] [streams] [wakeups]`
 * (defaults 4, 200, 200); without KNOWLEDGE_STORE_CLI both sides are this build.
 */
import { fork } from 'node:child_process';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { EventChunk } from '../../src/http/events/eventChunks.js';
import type { FromFanOut, ToFanOut } from '../../src/http/events/fanOutMessages.js';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { CLI, ensureBuilt, ROOT } from '../support/child.js';

const ROUNDS = Number(process.argv[2] ?? 4);
const STREAMS = Number(process.argv[3] ?? 200);
const WAKEUPS = Number(process.argv[4] ?? 200);

interface Streams {
  receive(msg: ToFanOut, socket: net.Socket | undefined): void;
}
type StreamsClass = new (settings: typeof EVENT_STREAM_DEFAULTS, send: (msg: FromFanOut) => void) => Streams;

if (process.argv[2] === 'reader') {
  // The clients: N connections that read and drop what comes.
  process.on('message', (m: { port: number; n: number }) => {
    let connected = 0;
    for (let i = 0; i < m.n; i++) {
      const socket = net.connect(m.port, '127.0.0.1', () => {
        if (++connected === m.n) process.send?.('connected');
      });
      socket.resume();
    }
  });
  process.on('disconnect', () => process.exit(0));
} else {
  await ensureBuilt();
  const builds = {
    this: join(ROOT, 'dist/src/http/events/fanOutStreams.js'),
    other: join(dirname(CLI), '../http/events/fanOutStreams.js'),
  };
  const load = async (file: string): Promise<StreamsClass> => ((await import(pathToFileURL(file).href)) as { FanOutStreams: StreamsClass }).FanOutStreams;
  const classes = { this: await load(builds.this), other: await load(builds.other) };
  const reader = fork(fileURLToPath(import.meta.url), ['reader'], { execArgv: ['--import', 'tsx'] });
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const turnBytes = (n: number): Buffer => Buffer.from(Array.from({ length: 6 }, (_, k) => `id: c${n}-${k}\ndata: {"organizationId":"default","commitId":"c${n}-${k}","changes":[{"path":"bench/f${k}/item-${n}.md","change":"updated"}],"pad":"${'x'.repeat(220)}"}\n\n`).join(''));

  const round = async (Streams: StreamsClass): Promise<{ user: number; system: number; writes: number }> => {
    const sockets: net.Socket[] = [];
    const accepted = new Promise<void>((resolve) =>
      server.on('connection', (socket) => {
        socket.setNoDelay(true);
        if (sockets.push(socket) === STREAMS) resolve();
      }),
    );
    reader.send({ port, n: STREAMS });
    await accepted;
    server.removeAllListeners('connection');
    let head = 0;
    // The server's side of the channel: turns and key checks answered as the server answers them, a turn later.
    const send = (msg: FromFanOut): void => {
      if (msg.type === 'turn') {
        const chunk: EventChunk = { bytes: turnBytes(head), lastSent: `c${head}`, cursor: `c${head}`, walked: 6, full: false };
        setImmediate(() => streams.receive({ type: 'turn', req: msg.req, chunk }, undefined));
      } else if (msg.type === 'key') setImmediate(() => streams.receive({ type: 'key', req: msg.req, valid: true }, undefined));
    };
    const streams = new Streams(EVENT_STREAM_DEFAULTS, send);
    sockets.forEach((socket, id) => streams.receive({ type: 'open', id, orgId: 'o', head: 'c0', view: 'admin|*', keyId: 'k', cursor: 'c0', chunked: true, requestId: undefined }, socket));
    // Settled at the head first (their first turn), then measured.
    await new Promise((r) => setTimeout(r, 200));
    const before = process.cpuUsage();
    for (let w = 1; w <= WAKEUPS; w++) {
      head = w;
      streams.receive({ type: 'published', orgId: 'o', head: `c${w}` }, undefined);
      await new Promise((r) => setTimeout(r, 10));
    }
    const used = process.cpuUsage(before);
    streams.receive({ type: 'closing' }, undefined);
    sockets.forEach((s) => s.destroy());
    await new Promise((r) => setTimeout(r, 200));
    return { user: used.user, system: used.system, writes: STREAMS * WAKEUPS };
  };

  const totals = { this: { user: 0, system: 0, writes: 0 }, other: { user: 0, system: 0, writes: 0 } };
  // A round of each first, not counted (the JIT's and the heap's warm-up), then rounds in alternating order.
  await round(classes.other);
  await round(classes.this);
  for (let r = 0; r < ROUNDS; r++) {
    for (const side of r % 2 === 0 ? (['other', 'this'] as const) : (['this', 'other'] as const)) {
      const got = await round(classes[side]);
      totals[side].user += got.user;
      totals[side].system += got.system;
      totals[side].writes += got.writes;
    }
  }
  const { readFileSync } = await import('node:fs');
  for (const side of ['other', 'this'] as const) {
    const t = totals[side];
    console.log(`${side === 'this' ? 'this build ' : 'other build'} (${builds[side]}): ${((t.user + t.system) / t.writes).toFixed(2)} µs of CPU per stream write (user ${(t.user / t.writes).toFixed(2)}, kernel ${(t.system / t.writes).toFixed(2)}), ${t.writes} writes`);
  }
  console.log(`load average: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  reader.disconnect();
  server.close();
}
