import { writeSync as fsWriteSync } from 'node:fs';

export interface LogBufferOptions {
  /** Where the lines go (2: stderr). */
  fd?: number;
  /** Lines are written once this many characters wait. */
  maxChars?: number;
  /** ...and at the latest this long after the first of them arrived. */
  maxDelayMs?: number;
  /** The write (tests pass a failing or recording one); returns the bytes written, as fs.writeSync. */
  writeSync?: (fd: number, bytes: Buffer, offset: number) => number;
  /** How long one batch may wait for a reader that is behind (EAGAIN) before its rest is dropped. */
  maxStallMs?: number;
}

/** 16 Ki characters: about a hundred access lines per write. */
export const LOG_BUFFER_CHARS = 16 * 1024;
export const LOG_BUFFER_DELAY_MS = 100;
/** How long to wait before trying again when the reader of a non-blocking pipe is behind (EAGAIN). */
const BUSY_WAIT_MS = 5;
/**
 * The longest one batch waits for a stalled reader. Past it the rest of the batch is dropped, and so is every
 * later batch the reader cannot take at once, until it reads again: a log shipper that stopped reading must not
 * stop the server, as waiting without end (pino's synchronous destination did) would.
 */
export const LOG_STALL_MS = 1000;

/**
 * Log lines kept in memory and written out together: when `maxChars` wait, at the latest `maxDelayMs` after the
 * first of them, and whenever `flush` is called (an error line, the process's exit).
 *
 * Why: one write to stderr per access line was about a tenth of a fast GET's CPU (README, Logs). Batched, a write
 * carries a hundred lines. The writes stay synchronous, off the request (a timer or the size bound makes them):
 * so `flush` can be called at exit and after an error line and every line stays in order, where a write handed to
 * the thread pool could still be running when a later line is written at once. A `kill -9` loses what waits
 * here, at most `maxChars` and `maxDelayMs` of lines.
 */
export class LogBuffer {
  private lines: string[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly fd: number;
  private readonly maxChars: number;
  private readonly maxDelayMs: number;
  private readonly writeSync: (fd: number, bytes: Buffer, offset: number) => number;
  private readonly maxStallMs: number;
  /** Bytes dropped since the reader stalled (0: not stalled); said in a line of its own once it reads again. */
  private dropped = 0;
  /** The stall cut a line in two: its end was dropped. */
  private cut = false;
  private readonly flushLater = (): void => {
    this.timer = undefined;
    this.flush();
  };

  constructor(options: LogBufferOptions = {}) {
    this.fd = options.fd ?? 2;
    this.maxChars = options.maxChars ?? LOG_BUFFER_CHARS;
    this.maxDelayMs = options.maxDelayMs ?? LOG_BUFFER_DELAY_MS;
    this.writeSync = options.writeSync ?? ((fd, bytes, offset) => fsWriteSync(fd, bytes, offset));
    this.maxStallMs = options.maxStallMs ?? LOG_STALL_MS;
  }

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= this.maxChars) this.flush();
    // One timer at a time, left running through a flush by size: it only ever makes a line wait less.
    else if (this.timer === undefined) {
      this.timer = setTimeout(this.flushLater, this.maxDelayMs);
      this.timer.unref(); // a waiting line never keeps the process alive: 'exit' flushes it
    }
  }

  /** Writes every waiting line now. */
  flush(): void {
    if (this.lines.length === 0) return;
    const text = this.lines.join('');
    this.lines = [];
    this.chars = 0;
    this.writeAll(Buffer.from(text, 'utf8'));
  }

  /**
   * The whole of `bytes`, however many writes it takes. A reader behind on a non-blocking pipe (EAGAIN) is waited
   * for, at most `maxStallMs` per batch; then the rest is dropped, and while the reader stays stalled later
   * batches are dropped at their first EAGAIN, without waiting. When it reads again, a warning line says how many
   * bytes were lost, before the lines that follow. Any other failure (the reader gone: EPIPE) drops the lines:
   * logging never takes the server down.
   */
  private writeAll(bytes: Buffer): void {
    if (this.dropped > 0) {
      // A line cut by the stall is ended first, so the warning is a line of its own.
      const left = this.tryWrite(Buffer.from(`${this.cut ? '\n' : ''}${droppedLine(this.dropped)}`, 'utf8'), 0);
      if (left > 0) {
        this.dropped += bytes.length;
        return;
      }
      this.dropped = 0;
      this.cut = false;
    }
    this.dropped += this.tryWrite(bytes, this.maxStallMs);
  }

  /**
   * Writes `bytes`, waiting for a reader behind at most `stallMs` in all; returns how many bytes it gave up on
   * (they are dropped; `cut` notes a line left half written).
   */
  private tryWrite(bytes: Buffer, stallMs: number): number {
    let offset = 0;
    let waited = 0;
    while (offset < bytes.length) {
      try {
        offset += this.writeSync(this.fd, bytes, offset);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return 0;
        if (waited >= stallMs) {
          if (offset > 0 && bytes[offset - 1] !== 0x0a) this.cut = true;
          return bytes.length - offset;
        }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, BUSY_WAIT_MS);
        waited += BUSY_WAIT_MS;
      }
    }
    return 0;
  }
}

/** The line that says, once the reader reads again, what it missed. */
function droppedLine(bytes: number): string {
  return `${JSON.stringify({ level: 'warn', time: new Date().toISOString(), droppedBytes: bytes, msg: 'log lines dropped: the reader of stderr stopped reading' })}\n`;
}
