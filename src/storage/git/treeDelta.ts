/**
 * Git's copy instructions can say up to 24 bits of size, but C git writes at most 64 KiB per copy
 * and older readers (and isomorphic-git's) were written against that.
 */
const MAX_COPY = 0x10000;
/** An insert instruction carries 1 to 127 bytes. */
const MAX_INSERT = 0x7f;

/**
 * Writes a delta in git's format (as `applyDelta` reads it): the base's size and the result's size,
 * then instructions, merging adjacent copies into one range and adjacent inserts into one run.
 */
export class DeltaWriter {
  private readonly parts: Buffer[] = [];
  /** The copy range being extended, not yet written. */
  private copyFrom = 0;
  private copyLength = 0;
  /** Bytes to insert, not yet written. */
  private pending: Buffer[] = [];
  private pendingLength = 0;

  constructor(private readonly baseSize: number) {}

  copy(offset: number, length: number): void {
    this.flushInsert();
    if (this.copyLength > 0 && this.copyFrom + this.copyLength === offset) {
      this.copyLength += length;
      return;
    }
    this.flushCopy();
    this.copyFrom = offset;
    this.copyLength = length;
  }

  insert(bytes: Buffer): void {
    this.flushCopy();
    this.pending.push(bytes);
    this.pendingLength += bytes.byteLength;
  }

  /** The delta, to a result of `size` bytes. */
  finish(size: number): Buffer {
    this.flushCopy();
    this.flushInsert();
    return Buffer.concat([Buffer.from([...varint(this.baseSize), ...varint(size)]), ...this.parts]);
  }

  private flushCopy(): void {
    let offset = this.copyFrom;
    let left = this.copyLength;
    while (left > 0) {
      const length = Math.min(left, MAX_COPY);
      this.parts.push(copyInstruction(offset, length));
      offset += length;
      left -= length;
    }
    this.copyLength = 0;
  }

  private flushInsert(): void {
    if (this.pendingLength === 0) return;
    const data = Buffer.concat(this.pending, this.pendingLength);
    for (let at = 0; at < data.byteLength; at += MAX_INSERT) {
      const run = data.subarray(at, at + MAX_INSERT);
      this.parts.push(Buffer.from([run.byteLength]), run);
    }
    this.pending = [];
    this.pendingLength = 0;
  }
}

/** A copy instruction: the opcode's low bits say which offset (4) and size (3) bytes follow; zero bytes are left out. */
function copyInstruction(offset: number, length: number): Buffer {
  const bytes = [0x80];
  for (let bit = 0; bit < 4; bit++) {
    const byte = Math.floor(offset / 2 ** (8 * bit)) & 0xff;
    if (byte !== 0) {
      bytes[0] = (bytes[0] as number) | (1 << bit);
      bytes.push(byte);
    }
  }
  // A size of 0x10000 is written as no size bytes at all (the format's reading of "0").
  const size = length === MAX_COPY ? 0 : length;
  for (let bit = 0; bit < 3; bit++) {
    const byte = (size >>> (8 * bit)) & 0xff;
    if (byte !== 0) {
      bytes[0] = (bytes[0] as number) | (0x10 << bit);
      bytes.push(byte);
    }
  }
  return Buffer.from(bytes);
}

/** The delta header's sizes: 7 bits at a time, low first, high bit meaning "more follows". */
function varint(value: number): number[] {
  const bytes: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    bytes.push(byte);
  } while (rest > 0);
  return bytes;
}
