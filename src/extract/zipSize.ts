/**
 * What a zip (a DOCX) says it unpacks to: the sum of its central directory's uncompressed sizes,
 * read without inflating anything; null when the directory cannot be found or read. A bomb that
 * states its sizes is refused with this alone; one that lies still meets the worker's memory limit.
 */
export function zipInflatedSize(bytes: Uint8Array): number | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The end-of-central-directory record sits in the last 22 + 65,535 (comment) bytes.
  const floor = Math.max(0, bytes.byteLength - 22 - 0xffff);
  let eocd = -1;
  for (let at = bytes.byteLength - 22; at >= floor; at--) {
    if (view.getUint32(at, true) === 0x06054b50) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) return null;
  const entries = view.getUint16(eocd + 10, true);
  let at = view.getUint32(eocd + 16, true);
  let total = 0;
  for (let i = 0; i < entries; i++) {
    if (at + 46 > bytes.byteLength || view.getUint32(at, true) !== 0x02014b50) return null;
    const size = view.getUint32(at + 24, true);
    // 0xffffffff: the size is in a zip64 field; a DOCX never needs one, so take it as the bomb it is.
    total += size === 0xffffffff ? Number.MAX_SAFE_INTEGER / 2 : size;
    at += 46 + view.getUint16(at + 28, true) + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return total;
}
