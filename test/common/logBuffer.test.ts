import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createLogger } from '../../src/common/log.js';
import { LogBuffer } from '../../src/common/logBuffer.js';
import { sleep } from '../support/sleep.js';

/** A LogBuffer whose writes are recorded (as the text of each write) instead of going to stderr. */
function recorded(options: { maxChars?: number; maxDelayMs?: number; partial?: number } = {}): { buffer: LogBuffer; writes: string[] } {
  const writes: string[] = [];
  const writeSync = (_fd: number, bytes: Buffer, offset: number): number => {
    // `partial`: each write takes at most this many bytes, as a full pipe does.
    const end = options.partial ? Math.min(bytes.length, offset + options.partial) : bytes.length;
    writes.push(bytes.subarray(offset, end).toString('utf8'));
    return end - offset;
  };
  return { buffer: new LogBuffer({ maxChars: options.maxChars, maxDelayMs: options.maxDelayMs ?? 60_000, writeSync }), writes };
}

const LOG_MODULE = fileURLToPath(new URL('../../src/common/log.ts', import.meta.url));

/** Runs `body` in a child node with a buffered logger `log` on stderr; returns its stderr lines and exit code. */
function child(body: string): { lines: string[]; status: number | null } {
  const script = `import { createLogger } from ${JSON.stringify(LOG_MODULE)};\nconst log = createLogger({ level: 'info', buffer: true });\n${body}`;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  return { lines: run.stderr.split('\n').filter((l) => l.startsWith('{')), status: run.status };
}

describe('LogBuffer (the server log destination)', () => {
  it('holds lines until maxChars wait, then writes them all in one write, in order', () => {
    const { buffer, writes } = recorded({ maxChars: 100 });
    for (let i = 0; i < 3; i++) buffer.write(`line ${i} ${'x'.repeat(20)}\n`);
    expect(writes).to.deep.equal([]);
    buffer.write(`line 3 ${'x'.repeat(20)}\n`);
    expect(writes).to.have.length(1);
    expect((writes[0] as string).split('\n').slice(0, -1).map((l) => l.slice(0, 6))).to.deep.equal(['line 0', 'line 1', 'line 2', 'line 3']);
  });

  it('writes a waiting line within maxDelayMs, with nothing more written after it', async () => {
    const { buffer, writes } = recorded({ maxDelayMs: 30 });
    buffer.write('one\n');
    expect(writes).to.deep.equal([]);
    await sleep(300);
    expect(writes).to.deep.equal(['one\n']);
    buffer.write('two\n');
    await sleep(300);
    expect(writes).to.deep.equal(['one\n', 'two\n']);
  });

  it('writes all of a batch when the destination takes part of it at a time (a full pipe)', () => {
    const { buffer, writes } = recorded({ partial: 7 });
    const text = ['é first line\n', 'second line\n', 'third\n'];
    for (const l of text) buffer.write(l);
    buffer.flush();
    expect(writes.join('')).to.equal(text.join(''));
    expect(writes.length).to.be.above(3);
  });

  it('a logger on it writes an error or warning line, and every line before it, at once', () => {
    const { buffer, writes } = recorded();
    const log = createLogger({ level: 'info', buffer });
    log.info('request', { status: 200 });
    log.info('request', { status: 304 });
    expect(writes).to.deep.equal([]);
    log.error('fault', { error: 'boom' });
    const lines = writes.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; status?: number });
    expect(lines.map((l) => [l.msg, l.status])).to.deep.equal([
      ['request', 200],
      ['request', 304],
      ['fault', undefined],
    ]);
    log.info('later');
    log.warn('a warning');
    expect(writes.join('').split('\n').filter(Boolean)).to.have.length(5);
  });

  it('keeps the line format of the unbuffered logger, byte for byte bar the time', () => {
    const { buffer, writes } = recorded();
    const direct: string[] = [];
    const fields = { requestId: 'r-1', method: 'GET', route: '/api/v1/knowledge/items{/*path}', status: 200, ms: 0.123, keyId: 'key_0123456789abcdef' };
    createLogger({ level: 'info', buffer }).info('request', fields);
    createLogger({ level: 'info', write: (l) => direct.push(l) }).info('request', fields);
    buffer.flush();
    const noTime = (l: string): string => l.replace(/"time":"[^"]+"/, '"time":"T"');
    expect(writes.map(noTime)).to.deep.equal(direct.map(noTime));
  });

  describe('a reader that stops reading (EAGAIN without end)', () => {
    /** A destination that takes `accept` bytes, then reports a full pipe until `reading` is set again. */
    function stalling(accept: number): { buffer: LogBuffer; out: string[]; attempts: () => number; read: () => void; waitedOn: () => boolean } {
      const out: string[] = [];
      let taken = 0;
      let reading = false;
      let attempts = 0;
      let refusals = 0;
      const writeSync = (_fd: number, bytes: Buffer, offset: number): number => {
        attempts++;
        const room = reading ? bytes.length - offset : Math.min(bytes.length - offset, accept - taken);
        // 200 refusals in a row are a second at the 5 ms retry: a writer that waits without end is stopped here
        // (as if the reader had gone), so the test fails instead of hanging.
        if (room <= 0 && ++refusals > 200) throw Object.assign(new Error('EPIPE'), { code: 'EPIPE' });
        if (room <= 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
        refusals = 0;
        taken += room;
        out.push(bytes.subarray(offset, offset + room).toString('utf8'));
        return room;
      };
      const buffer = new LogBuffer({ maxDelayMs: 60_000, maxStallMs: 20, writeSync });
      return { buffer, out, attempts: () => attempts, read: () => (reading = true), waitedOn: () => refusals > 200 };
    }

    it('gives up on a batch after maxStallMs, drops later batches at once, and says what was lost when it reads again', () => {
      const { buffer, out, attempts, read, waitedOn } = stalling(10);
      buffer.write('first line is long\n');
      buffer.flush();
      expect(waitedOn(), 'the batch was waited on for more than maxStallMs').to.equal(false);
      expect(out.join('')).to.equal('first line');
      const before = attempts();
      buffer.write('second\n');
      buffer.flush();
      expect(attempts() - before, 'a stalled reader is not waited for again').to.equal(1);
      read();
      buffer.write('third\n');
      buffer.flush();
      const lines = out.join('').split('\n');
      expect(lines[0]).to.equal('first line');
      const warning = JSON.parse(lines[1] as string) as { level: string; droppedBytes: number; msg: string };
      expect(warning.level).to.equal('warn');
      expect(warning.droppedBytes).to.equal('first line is long\n'.length - 10 + 'second\n'.length);
      expect(lines.slice(2)).to.deep.equal(['third', '']);
    });
  });

  describe('in a process of its own (stderr)', function () {
    this.timeout(60_000);

    it('a process that exits (process.exit) writes what waits', () => {
      const { lines, status } = child(`for (let i = 0; i < 50; i++) log.info('request', { i });\nprocess.exit(3);`);
      expect(status).to.equal(3);
      expect(lines.map((l) => (JSON.parse(l) as { i: number }).i)).to.deep.equal([...Array(50).keys()]);
    });

    it('a process that crashes (an uncaught exception) writes what waits', () => {
      const { lines, status } = child(`for (let i = 0; i < 50; i++) log.info('request', { i });\nsetTimeout(() => { throw new Error('crash'); }, 1);`);
      expect(status).to.equal(1);
      expect(lines).to.have.length(50);
    });

    it('a waiting line does not keep the process alive, and is written when it ends', () => {
      const { lines, status } = child(`log.info('last words');`);
      expect(status).to.equal(0);
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include('"msg":"last words"');
    });
  });
});
