import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { getPriority, setPriority } from 'node:os';
import type { Logger } from '../../common/log.js';

/** What the fan-out host (fanOutHost.ts) asks of the operating system for its process and the sockets it hands over. */

/**
 * child_process treats a socket sent with the net.Server it came from as a cluster worker's, and the server's
 * close() then waits for the receiving process's sockets: it never calls back once that process has died (a
 * worker gone is dropped from its list, yet still waited for), and it counts its own connections off. A
 * handed-over socket is not the HTTP server's to wait for (this host ends its streams and stops the process
 * itself), so the server is told to track nothing: its _setupWorker, called at the first handover, does nothing.
 */
export function untracked(socket: Socket): void {
  const server = (socket as unknown as { server?: { _setupWorker?: (list: unknown) => void } }).server;
  if (server && server._setupWorker !== trackNothing) server._setupWorker = trackNothing;
}

function trackNothing(): void {}

/**
 * The fan-out process's niceness. On a machine whose cores are busy, the writers' requests come first and the events
 * wait: measured with test/bench/events.ts on 2 cores, the PUT p95 that 200 listeners added fell from +22–34% at the
 * server's own priority to +7–14% at 10 (the event lag p95 rose from ~60 to ~75 ms). An idle core serves it at once.
 */
const FAN_OUT_NICENESS = 10;

export function lowerPriority(child: ChildProcess, logger: Logger): void {
  if (child.pid === undefined) return;
  try {
    // Only ever lowered (a higher niceness), which needs no privilege; at most 19.
    setPriority(child.pid, Math.min(19, getPriority() + FAN_OUT_NICENESS));
  } catch (err) {
    logger.debug('event fan-out process keeps the server priority', { error: String(err) });
  }
}
