import net from 'node:net';
import { expect } from 'chai';
import { LINGER_MS } from '../../src/http/lingeringClose.js';
import { commitCount } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import { parseResponse } from './rawHttp.js';

/**
 * A body refused for its size while the client is still sending it (413, `Connection: close`): the server
 * closes in stages (RFC 9112 §9.6). It sends its answer and a FIN, then reads and discards what the client
 * still sends until the client closes or the linger runs out. Closing at once with unread bytes in the
 * socket makes the kernel send a reset, which can discard the answer before the client has read it.
 */
describe('Lingering close after a refusal mid-body', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  const CHUNK = 64 * 1024;
  const head = (): string =>
    `PUT /api/v1/knowledge/items/big.md HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${server.adminKey}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const chunk = `${CHUNK.toString(16)}\r\n${'x'.repeat(CHUNK)}\r\n`;

  /**
   * A connection that records what it reads and whether it was reset. Node's sockets close their side when the
   * server's FIN comes; `allowHalfOpen` is a client that goes on sending regardless.
   */
  function connect(allowHalfOpen = false): { socket: net.Socket; data: () => Buffer; errors: string[]; closed: Promise<void>; ended: () => boolean } {
    const { hostname, port } = new URL(server.url);
    const socket = net.connect({ port: Number(port), host: hostname, allowHalfOpen });
    const chunks: Buffer[] = [];
    const errors: string[] = [];
    let ended = false;
    socket.on('data', (b: Buffer) => chunks.push(b));
    socket.on('end', () => {
      ended = true;
    });
    socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    return { socket, data: () => Buffer.concat(chunks), errors, closed, ended: () => ended };
  }

  const write = (socket: net.Socket, text: string): Promise<void> =>
    new Promise((resolve) => {
      if (socket.destroyed) return resolve();
      socket.write(text, () => resolve());
    });

  it('a client that reads only after sending 4 MB still gets its 413', async () => {
    // It writes without reading (as a simple client does: send the request, then read the answer), so the
    // answer sits unread in its socket while the server refuses and closes.
    for (let round = 0; round < 3; round++) {
      const c = connect();
      c.socket.pause();
      await new Promise((resolve) => c.socket.once('connect', resolve));
      await write(c.socket, head());
      for (let sent = 0; sent < 4 * 1024 * 1024 && !c.socket.destroyed; sent += CHUNK) c.socket.write(chunk);
      await sleep(300);
      c.socket.resume();
      await Promise.race([c.closed, sleep(5000)]);
      const parsed = parseResponse(c.data());
      expect(parsed?.response.status, `round ${round}: ${c.errors.join(', ') || 'no error'}, ${c.data().length} bytes read`).to.equal(413);
      expect(parsed?.response.headers.connection).to.equal('close');
      c.socket.destroy();
    }
  });

  it('what the client sends after the answer is read and discarded, and the connection ends with a FIN, not a reset', async () => {
    const c = connect(true);
    await new Promise((resolve) => c.socket.once('connect', resolve));
    await write(c.socket, head());
    while (!parseResponse(c.data()) && !c.socket.destroyed) await write(c.socket, chunk);
    expect(parseResponse(c.data())?.response.status).to.equal(413);
    // The server has answered and half-closed. Long after a plain close would have torn the connection down,
    // the client finishes its body, then closes its side.
    await sleep(200);
    expect(c.ended(), 'the server half-closed after its answer').to.equal(true);
    for (let i = 0; i < 8; i++) await write(c.socket, chunk);
    await write(c.socket, '0\r\n\r\n');
    c.socket.end();
    await Promise.race([c.closed, sleep(5000)]);
    expect(c.errors, 'the client saw no reset').to.deep.equal([]);
  });

  it('a client that never stops sending is cut off once the linger runs out', async () => {
    const c = connect(true);
    await new Promise((resolve) => c.socket.once('connect', resolve));
    await write(c.socket, head());
    while (!parseResponse(c.data()) && !c.socket.destroyed) await write(c.socket, chunk);
    const answered = Date.now();
    while (!c.socket.destroyed && Date.now() - answered < 10_000) {
      await write(c.socket, chunk);
      await sleep(5);
    }
    expect(c.socket.destroyed, 'the server cut the connection').to.equal(true);
    // The linger's timer starts as the answer goes out, a little before the client reads it; a plain close took ~5 ms.
    expect(Date.now() - answered).to.be.within(LINGER_MS - 500, LINGER_MS + 3_000);
  });

  it('a request sent after the refused body on the same connection is not served', async () => {
    const before = await commitCount(server.gitdir());
    const c = connect(true);
    await new Promise((resolve) => c.socket.once('connect', resolve));
    await write(c.socket, head());
    while (!parseResponse(c.data()) && !c.socket.destroyed) await write(c.socket, chunk);
    const body = JSON.stringify({ content: 'pipelined' });
    await write(c.socket, '0\r\n\r\n');
    await write(
      c.socket,
      `PUT /api/v1/knowledge/items/after.md HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${server.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    c.socket.end();
    await Promise.race([c.closed, sleep(5000)]);
    // Time for a PUT that was (wrongly) taken to reach its commit.
    await sleep(500);
    const first = parseResponse(c.data());
    expect(first?.response.status).to.equal(413);
    expect(first && parseResponse(first.rest), 'no second answer').to.equal(undefined);
    expect(await commitCount(server.gitdir())).to.equal(before);
    c.socket.destroy();
  });
});
