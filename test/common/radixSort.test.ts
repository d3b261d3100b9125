import { expect } from 'chai';
import { RADIX_FROM, radixSorted } from '../../src/common/radixSort.js';

/**
 * The radix sort of a pack index's offsets: the same order as the built-in sort, whatever the values. Arrays of
 * RADIX_FROM values or more take the radix passes (the cases below are that long), smaller ones the built-in sort.
 */
describe('common: radixSorted', () => {
  /** A generator of 32-bit values, seeded, so that a failure is the same at the next run. */
  const values = (seed: number, n: number, pick: (next: () => number) => number): Uint32Array => {
    let state = seed;
    const next = (): number => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state;
    };
    return Uint32Array.from({ length: n }, () => pick(next) >>> 0);
  };
  const cases: [string, Uint32Array][] = [
    ['empty', new Uint32Array(0)],
    ['one value', Uint32Array.of(7)],
    ['the extremes, repeated', Uint32Array.of(0xffffffff, 0, 0x10000, 0xffff, 0, 0xffffffff, 0x8000_0000, 0x7fff_ffff)],
    ['a small array, any values (the built-in sort)', values(5, 1_000, (next) => next())],
    ['any 32-bit values', values(1, RADIX_FROM + 10_000, (next) => next())],
    ['low digits only (the high pass moves nothing)', values(2, RADIX_FROM, (next) => next() & 0xffff)],
    ['high digits only (the low pass moves nothing)', values(3, RADIX_FROM + 1, (next) => next() & 0xffff0000)],
    ['many equal values', values(4, RADIX_FROM + 5_000, (next) => (next() % 7) * 0x12345)],
    ['sorted already, and reversed', Uint32Array.from({ length: 2 * RADIX_FROM }, (_, i) => (i < RADIX_FROM ? i * 977 : (2 * RADIX_FROM - i) * 1_000_003))],
  ];
  for (const [label, input] of cases) {
    it(`${label}: in place, as Uint32Array.prototype.sort orders them`, () => {
      const expected = [...input.slice().sort()];
      const out = radixSorted(input);
      expect(out, 'sorted in place').to.equal(input);
      expect([...out]).to.deep.equal(expected);
    });
  }
});
