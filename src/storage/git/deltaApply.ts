/**
 * Git's delta format (pack entries OFS_DELTA and REF_DELTA): the base's size
 * and the result's size as varints, then instructions, each either "copy
 * `size` bytes from the base at `offset`" (high bit set; which offset and size
 * bytes follow is in the low seven bits) or "insert the next 1-127 bytes".
 * Every instruction is checked against both buffers: a damaged delta is an
 * error (`reason`), never a read out of bounds.
 */
export function applyDelta(base: Buffer, delta: Buffer): Buffer | { reason: string } {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (at >= delta.byteLength) return -1;
      const byte = delta[at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(byte & 0x80)) return value;
    }
  };
  const baseSize = varint();
  if (baseSize !== base.byteLength) return { reason: `delta expects a base of ${baseSize} bytes, the base has ${base.byteLength}` };
  const size = varint();
  if (size < 0) return { reason: 'delta header cut short' };
  const out = Buffer.allocUnsafe(size);
  let written = 0;
  while (at < delta.byteLength) {
    const op = delta[at++] as number;
    if (op & 0x80) {
      let offset = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += (delta[at++] ?? 0) * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) length += (delta[at++] ?? 0) * 2 ** (8 * bit);
      if (length === 0) length = 0x10000;
      if (at > delta.byteLength || offset + length > base.byteLength || written + length > size) return { reason: 'delta copies out of range' };
      base.copy(out, written, offset, offset + length);
      written += length;
    } else if (op !== 0) {
      if (at + op > delta.byteLength || written + op > size) return { reason: 'delta inserts out of range' };
      delta.copy(out, written, at, at + op);
      at += op;
      written += op;
    } else {
      return { reason: 'delta has the reserved instruction 0' };
    }
  }
  return written === size ? out : { reason: `delta produced ${written} bytes, its header says ${size}` };
}
