import net from 'node:net';

/** A response read off a raw socket: what a misbehaving client sees. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the connection to the end of the response. */
  ms: number;
}

/** Parses one HTTP/1.1 response (Content-Length framed, as every answer of ours is) from the start of `data`. */
export function parseResponse(data: Buffer): { response: Omit<RawResponse, 'ms'>; rest: Buffer } | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (data.length < end + 4 + length) return undefined;
  const body = data.subarray(end + 4, end + 4 + length).toString('utf8');
  return { response: { status: Number(statusLine.split(' ')[1]), headers, body }, rest: data.subarray(end + 4 + length) };
}

/**
 * Connects to `url`, lets `send` write whatever it likes, and resolves with the first response
 * (or rejects after `timeoutMs`). `closed` resolves when the server (or anyone) closes the socket.
 */
export function rawExchange(
  url: string,
  send: (socket: net.Socket, answered: () => boolean) => void | Promise<void>,
  timeoutMs = 10_000,
): { response: Promise<RawResponse>; closed: Promise<void>; socket: net.Socket } {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  const socket = net.connect(Number(port), hostname);
  let data = Buffer.alloc(0);
  let answered = false;
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const response = new Promise<RawResponse>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const parsed = parseResponse(data);
      if (!parsed || answered) return;
      answered = true;
      clearTimeout(timer);
      resolve({ ...parsed.response, ms: Date.now() - started });
    });
    // The server may close (or reset) the connection right after answering: the answer is what counts.
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      if (!answered) reject(new Error('connection closed without a response'));
    });
    socket.once('connect', () => void Promise.resolve(send(socket, () => answered)).catch(reject));
  });
  return { response, closed, socket };
}
