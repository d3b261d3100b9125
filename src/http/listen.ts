import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { errnoCode } from '../common/errors.js';
import { standardHeaders } from './headers.js';
import { PortInUse } from './httpErrors.js';
import { isLingering } from './lingeringClose.js';

export interface Listening {
  url: string;
  port: number;
  /** Stops accepting and lets requests in flight finish, for at most `graceMs`. */
  close(graceMs: number): Promise<void>;
}

/**
 * Serves `handler` on `host:port` with Node's HTTP parser set for an API on
 * the open network, and the answers Node gives itself (unparsable requests,
 * oversized headers, timeouts, unknown Expect) in the same JSON envelope and
 * headers as every other response.
 */
export async function listen(args: { handler: http.RequestListener; host: string; port: number }): Promise<Listening> {
  const server = http.createServer(
    {
      maxHeaderSize: 16 * 1024,
      // A client has 15 s to send its headers and 60 s for the whole request (slowloris);
      // the timeouts are checked every second rather than Node's default 30 s, so slow clients go promptly.
      headersTimeout: 15_000,
      requestTimeout: 60_000,
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: 5_000,
      // Node would answer a request without Host with a bare 400 of its own; the app answers everything.
      requireHostHeader: false,
    },
    // A request that follows a refused body on its connection is not served: the refusal said the connection
    // closes, and it is closing (lingeringClose.ts). Its body is dropped with the rest.
    (req, res) => (isLingering(req.socket) ? void req.resume() : args.handler(req, res)),
  );
  // Node answers an Expect other than 100-continue itself (bare 417) unless asked: give it the envelope.
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = JSON.stringify({ success: false, error: 'Expectation failed' });
    res.writeHead(417, { ...standardHeaders(), 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  // Errors Node's HTTP parser answers itself (oversized headers, garbage) still get the JSON envelope.
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    // A response already under way on this socket cannot be replaced; Node's own handler gives up too.
    if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const reason = status === 431 ? 'Request header fields too large' : status === 408 ? 'Request timeout' : 'Bad request';
    // An answer to HEAD has no body, even when the request could not be parsed past its method.
    const head = err.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    const body = head ? '' : JSON.stringify({ success: false, error: reason });
    const headers = { ...standardHeaders(), 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' };
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.end(`HTTP/1.1 ${status} ${reason}\r\n${lines}\r\n${body}`);
  });
  await new Promise<void>((resolve, reject) => {
    const refused = (err: Error): void => reject(errnoCode(err) === 'EADDRINUSE' ? new PortInUse({ host: args.host, port: args.port }) : err);
    server.once('error', refused);
    server.listen(args.port, args.host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = args.host.includes(':') ? `[${args.host}]` : args.host;
  const close = async (graceMs: number): Promise<void> => {
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    await stopped;
    clearTimeout(timer);
  };
  return { url: `http://${host}:${port}`, port, close };
}
