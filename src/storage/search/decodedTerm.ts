/** A term's postings decoded whole (RankIndex's compaction), and the typed arrays they live in. */

/** One term's live postings, decoded: documents in increasing order, and the counts. */
export interface DecodedTerm {
  docs: Int32Array;
  body: Int32Array;
  path: Int32Array;
  /** How many (the arrays are longer). */
  n: number;
}

/** A typed array of twice the length, holding the same values first. */
export function grow<T extends Uint8Array | Int32Array | Uint32Array | Float64Array>(a: T): T {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2);
  b.set(a);
  return b;
}

/** Room for `n` postings (the next power of two). */
export function sizedDecoded(n: number): DecodedTerm {
  const size = 2 ** Math.ceil(Math.log2(n));
  return { docs: new Int32Array(size), body: new Int32Array(size), path: new Int32Array(size), n: 0 };
}

/** Scratch space for one decoded term. */
export function decodedTerm(): DecodedTerm {
  return { docs: new Int32Array(1024), body: new Int32Array(1024), path: new Int32Array(1024), n: 0 };
}
