import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long what a client still sends after its refusal is read and discarded. Apache lingers up to 2 s a read,
 * nginx 5 s in all; a client that has not read its answer by then is one that does not read.
 */
export const LINGER_MS = 2_000;

const lingering = new WeakSet<Socket>();

/** Whether `socket` is being closed in stages: a request that arrives on it is never served. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * Closes the connection of a request refused before its body was read whole (a 413, `Connection: close`) in
 * stages, as RFC 9112 §9.6 asks. Closed at once, with the client's bytes still unread in the socket, the kernel
 * answers them with a reset, and a reset can discard the refusal before the client has read it (a client that
 * sends its whole body before it reads, as a simple blocking client does, saw no answer at all). So the answer
 * goes, then a FIN; what the client still sends is read and dropped until it closes its side, or for `lingerMs`
 * at most.
 * Requests that follow on the connection are never served (`isLingering`): the answer said it closes.
 */
export function closeInStages(req: IncomingMessage, lingerMs = LINGER_MS): void {
  const socket = req.socket;
  if (req.complete || socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  // The body's reader stopped at the limit and paused the request: read on, and drop what comes.
  req.unpipe();
  req.removeAllListeners('data');
  req.resume();
  // Node ends a `Connection: close` answer's socket with destroySoon(): a FIN, then a close as soon as the FIN
  // is out, which resets the connection while bytes are unread. Here only the client's FIN, or the linger's
  // end, closes it.
  socket.destroySoon = () => {
    if (socket.writable) socket.end();
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  };
}
