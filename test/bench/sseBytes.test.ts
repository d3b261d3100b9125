import { expect } from 'chai';
import { SseBytes } from './sseBytes.js';

/** A chunked event-stream answer as the server writes it: the head, `: connected`, then one chunk per turn. */
function answer(turns: string[][]): Buffer {
  const chunk = (text: string): string => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
  const head = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n';
  const body = [chunk('retry: 2000\n: connected\n\n'), ...turns.map((ids) => chunk(ids.map((id) => `id: ${id}\ndata: {"commitId":"${id}","path":"é/\\n"}\n\n`).join(''))), chunk(': heartbeat\n\n')];
  return Buffer.from(head + body.join(''));
}

describe("The events bench's listeners: an event stream read from the raw bytes", () => {
  it('finds every id, in order, however the bytes are split into reads', () => {
    const bytes = answer([['c1'], ['c2', 'c3', 'c4'], ['c5']]);
    for (const size of [1, 2, 3, 7, 64, bytes.length]) {
      let started = 0;
      const reader = new SseBytes(() => started++);
      for (let at = 0; at < bytes.length; at += size) reader.push(bytes.subarray(at, at + size), at);
      expect(reader.ids, `reads of ${size} bytes`).to.deep.equal(['c1', 'c2', 'c3', 'c4', 'c5']);
      expect(started).to.equal(1);
    }
  });

  it('refuses an answer that is not a chunked 200 event stream, and a broken chunk', () => {
    const push = (text: string): void => new SseBytes(() => undefined).push(Buffer.from(text), 0);
    expect(() => push('HTTP/1.1 429 Too Many Requests\r\n\r\n')).to.throw('stream: HTTP/1.1 429');
    expect(() => push('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n')).to.throw('not chunked');
    expect(() => push('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY')).to.throw('CRLF');
  });
});
