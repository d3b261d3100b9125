import type { Socket } from 'node:net';
import type { FromFanOut, ToFanOut } from './fanOutMessages.js';
import { FanOutStreams } from './fanOutStreams.js';
import { chrtSetClass, FanOutScheduling } from './fanOutScheduling.js';
import type { EventStreamSettings } from './streamLimits.js';

/*
 * The event fan-out process (started by fanOutHost.ts with child_process.fork): it owns the sockets of
 * the event streams, so that their writes, heartbeats and slow readers cost the writer's event loop
 * nothing but one message per wake-up. It has no data directory and no key store: what it may send, it
 * asks the server.
 */
const settings = JSON.parse(process.argv[2] ?? '{}') as EventStreamSettings;

const send = (msg: FromFanOut): void => {
  // The channel is gone when the server is: the 'disconnect' below ends this process.
  if (process.connected) process.send?.(msg);
};

const streams = new FanOutStreams(settings, send);
process.on('message', (msg: ToFanOut, socket: Socket | undefined) => streams.receive(msg, socket));
// No orphan: when the server goes (stopped, or killed), the channel closes and so does this process; its
// sockets close with it and their clients resume elsewhere with Last-Event-ID.
process.on('disconnect', () => process.exit(0));
process.on('uncaughtException', (err) => {
  // Said before dying (the server restarts this process; its streams' clients resume).
  const msg: FromFanOut = { type: 'log', level: 'error', msg: 'event fan-out process failed', fields: { error: String(err.stack ?? err) } };
  if (process.connected) process.send?.(msg, () => process.exit(1));
  setTimeout(() => process.exit(1), 1000).unref();
});
send({ type: 'ready' });

if (settings.fanOutPriority !== 'nice' && process.platform === 'linux') {
  const scheduling = new FanOutScheduling({
    setClass: chrtSetClass(process.pid),
    now: () => performance.now(),
    // The watchdog alone keeps no process alive: the channel's end still ends it.
    every: (ms, fn) => void setInterval(fn, ms).unref(),
    log: (level, msg, fields) => send({ type: 'log', level, msg, fields }),
  });
  void scheduling.start();
}
