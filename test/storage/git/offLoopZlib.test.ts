import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';
import { deflateOffLoop, inflateOffLoop } from '../../../src/storage/git/offLoopZlib.js';

/** zlib on the thread pool in one pass: the same bytes as zlib in place, whatever the size it was told to expect. */
describe('storage/offLoopZlib: inflate and deflate off the event loop, in one pass', () => {
  const text = Buffer.from(Array.from({ length: 60_000 }, (_, i) => `line ${i}: ${randomBytes(24).toString('base64')}`).join('\n'));
  const random = randomBytes(3 * 1024 * 1024 + 5);

  it('inflates to exactly what was deflated, told the right size, too small a size, or far too large', async () => {
    for (const raw of [text, random, Buffer.alloc(0)]) {
      const compressed = deflateSync(raw);
      for (const expected of [raw.byteLength, 1, raw.byteLength * 10]) {
        expect((await inflateOffLoop(compressed, expected)).equals(raw), `${raw.byteLength} bytes told ${expected}`).to.equal(true);
      }
    }
  });

  it('refuses to grow past maxOutputLength (a damaged or hostile stream), and rejects what is not zlib', async () => {
    const compressed = deflateSync(text);
    const err = await inflateOffLoop(compressed, text.byteLength, text.byteLength - 1).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(RangeError);
    expect(await inflateOffLoop(compressed, text.byteLength, text.byteLength).then((b) => b.equals(text))).to.equal(true);
    expect(await inflateOffLoop(Buffer.from('not zlib at all'), 100).catch((e: unknown) => (e as { code?: string }).code)).to.equal('Z_DATA_ERROR');
  });

  it('deflates what inflateSync gives back whole, at the level asked', async () => {
    for (const raw of [text, random]) {
      const fast = await deflateOffLoop(raw, 1);
      expect(inflateSync(fast).equals(raw)).to.equal(true);
      expect(fast.equals(deflateSync(raw, { level: 1 })), 'the same stream as zlib in place at level 1').to.equal(true);
    }
  });
});
