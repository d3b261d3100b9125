import { expect } from 'chai';
import { Interrupt } from '../../src/common/interrupt.js';
import { collected } from '../support/collect.js';

describe('Interrupt: a one-time signal raced by a long-lived loop', () => {
  it("gives the work's result, or its failure, while the signal has not fired", async () => {
    const interrupt = new Interrupt();
    expect(await interrupt.race(Promise.resolve(7))).to.equal(7);
    let failure: unknown;
    await interrupt.race(Promise.reject(new Error('no'))).catch((err: unknown) => (failure = err));
    expect(String(failure)).to.equal('Error: no');
  });

  it('settles a waiting race with null when it fires, and every later race at once', async () => {
    const interrupt = new Interrupt();
    const waiting = interrupt.race(new Promise<number>(() => undefined));
    interrupt.fire();
    expect(await waiting).to.equal(null);
    expect(interrupt.fired).to.equal(true);
    expect(await interrupt.race(Promise.resolve(1))).to.equal(null);
  });

  it('keeps nothing of a settled race while the signal is pending (Promise.race would keep every result)', async () => {
    const interrupt = new Interrupt();
    // Each turn made and raced in a call of its own: nothing of this test's frame holds it afterwards.
    const raced = async (): Promise<WeakRef<object>> => {
      const turn = { bytes: Buffer.alloc(1024) };
      expect(await interrupt.race(Promise.resolve(turn))).to.equal(turn);
      return new WeakRef(turn);
    };
    const refs = [await raced(), await raced(), await raced()];
    for (const ref of refs) expect(await collected(ref)).to.equal(true);
  });
});
