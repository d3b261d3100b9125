/**
 * An event stream's answer read from the raw bytes of its connection, for the events bench's listeners: the
 * status line and headers (200, chunked), the HTTP/1.1 chunks unframed, the events split on their blank line,
 * each event's `id:` kept with the time its bytes came. Only what the bench checks, with as little work per
 * read as a client can do: no string is made of an event but its id.
 */
export class SseBytes {
  /** The ids of the events so far, in the order they came, and when each came. */
  readonly ids: string[] = [];
  readonly arrivals: number[] = [];
  /** Whether the head was read and the first bytes of the body (`: connected`) came. */
  started = false;
  private head: Buffer = Buffer.alloc(0);
  private inHead = true;
  /** Bytes of the current chunk still to come (-1: a size line is next), and an unfinished size line or chunk end. */
  private chunkLeft = -1;
  private frame: Buffer = Buffer.alloc(0);
  /** Body bytes after the last event's blank line. */
  private event: Buffer = Buffer.alloc(0);

  constructor(private readonly onStart: () => void) {}

  push(bytes: Buffer, at: number): void {
    let rest = bytes;
    if (this.inHead) {
      this.head = Buffer.concat([this.head, rest]);
      const end = this.head.indexOf(HEAD_END);
      if (end === -1) return;
      checkHead(this.head.toString('latin1', 0, end));
      rest = this.head.subarray(end + HEAD_END.length);
      this.inHead = false;
    }
    this.unframe(rest, at);
  }

  /** Takes the HTTP/1.1 chunk framing off and hands each piece of body to `events`. */
  private unframe(bytes: Buffer, at: number): void {
    let rest = this.frame.length === 0 ? bytes : Buffer.concat([this.frame, bytes]);
    this.frame = EMPTY;
    while (rest.length > 0) {
      if (this.chunkLeft === -1) {
        const eol = rest.indexOf(CRLF);
        if (eol === -1) {
          this.frame = rest;
          return;
        }
        const size = Number.parseInt(rest.toString('latin1', 0, eol), 16);
        if (!Number.isInteger(size) || size < 0) throw new Error(`bad chunk size line: ${JSON.stringify(rest.toString('latin1', 0, eol))}`);
        if (size === 0) throw new Error('the stream ended (last chunk)');
        this.chunkLeft = size;
        rest = rest.subarray(eol + CRLF.length);
        continue;
      }
      if (this.chunkLeft === 0) {
        // The chunk's closing CRLF (both bytes needed before it is checked).
        if (rest.length < CRLF.length) {
          this.frame = rest;
          return;
        }
        if (rest[0] !== 13 || rest[1] !== 10) throw new Error('a chunk does not end with CRLF');
        this.chunkLeft = -1;
        rest = rest.subarray(CRLF.length);
        continue;
      }
      const take = Math.min(this.chunkLeft, rest.length);
      this.events(rest.subarray(0, take), at);
      this.chunkLeft -= take;
      rest = rest.subarray(take);
    }
  }

  /** Splits body bytes into events (blank line), noting the id of each that has one. */
  private events(body: Buffer, at: number): void {
    let bytes = this.event.length === 0 ? body : Buffer.concat([this.event, body]);
    let start = 0;
    for (let end = bytes.indexOf(BLANK_LINE); end !== -1; end = bytes.indexOf(BLANK_LINE, start)) {
      // An event's fields are lines; `id` is the first one the server writes, the others are not needed here.
      if (bytes.indexOf(ID, start) === start) {
        const eol = bytes.indexOf(LF, start);
        this.ids.push(bytes.toString('latin1', start + ID.length, eol));
        this.arrivals.push(at);
      }
      start = end + BLANK_LINE.length;
      if (!this.started) {
        this.started = true;
        this.onStart();
      }
    }
    bytes = bytes.subarray(start);
    // Kept as a copy: a slice would hold the whole read buffer until the event's end comes.
    this.event = bytes.length === 0 ? EMPTY : Buffer.from(bytes);
  }
}

/** The answer must be a 200 event stream, chunked (what the bench's unframing expects). */
function checkHead(head: string): void {
  const [status = '', ...headers] = head.split('\r\n');
  if (!status.startsWith('HTTP/1.1 200 ')) throw new Error(`stream: ${status}`);
  const has = (name: string, value: RegExp): boolean => headers.some((h) => h.toLowerCase().startsWith(`${name}:`) && value.test(h.slice(name.length + 1).trim()));
  if (!has('content-type', /^text\/event-stream\b/i)) throw new Error('stream: not text/event-stream');
  if (!has('transfer-encoding', /^chunked$/i)) throw new Error('stream: not chunked');
}

const EMPTY = Buffer.alloc(0);
const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const LF = 10;
const BLANK_LINE = Buffer.from('\n\n');
const ID = Buffer.from('id: ');
