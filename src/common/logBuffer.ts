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
}

/** 16 Ki characters: about a hundred access lines per write. */
export const LOG_BUFFER_CHARS = 16 * 1024;
export const LOG_BUFFER_DELAY_MS = 100;
/** How long to wait before trying again when the reader of a non-blocking pipe is behind (EAGAIN). */
const BUSY_WAIT_MS = 5;

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
  private readonly flushLater = (): void => {
    this.timer = undefined;
    this.flush();
  };

  constructor(options: LogBufferOptions = {}) {
    this.fd = options.fd ?? 2;
    this.maxChars = options.maxChars ?? LOG_BUFFER_CHARS;
    this.maxDelayMs = options.maxDelayMs ?? LOG_BUFFER_DELAY_MS;
    this.writeSync = options.writeSync ?? ((fd, bytes, offset) => fsWriteSync(fd, bytes, offset));
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
   * for, as pino's synchronous destination did; any other failure (the reader gone: EPIPE) drops the lines:
   * logging never takes the server down.
   */
  private writeAll(bytes: Buffer): void {
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += this.writeSync(this.fd, bytes, offset);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, BUSY_WAIT_MS);
      }
    }
  }
}
