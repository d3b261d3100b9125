/**
 * A seeded generator for property tests (xorshift32, Marsaglia): floats in [0, 1), the same
 * sequence for a seed on every run, so a failing case can be run again.
 */
export function random(seed: number): () => number {
  let x = seed >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}
