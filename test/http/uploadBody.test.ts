import { expect } from 'chai';
import { UploadSlots } from '../../src/http/uploadBody.js';

/** The uploads held in memory at once: the rest wait, in order, before their bodies are read. */
describe('http/UploadSlots', () => {
  it('runs at most `size` at once; the next starts when one ends, in arrival order', async () => {
    const slots = new UploadSlots(2);
    const started: number[] = [];
    const finish: Array<() => void> = [];
    const runs = [0, 1, 2, 3].map((i) =>
      slots.run(async () => {
        started.push(i);
        await new Promise<void>((resolve) => finish.push(resolve));
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal([0, 1]);
    expect(slots.queued).to.equal(2);
    finish[0]?.();
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal([0, 1, 2]);
    finish[1]?.();
    finish[2]?.();
    await new Promise((r) => setImmediate(r));
    finish[3]?.();
    expect(await Promise.all(runs)).to.deep.equal([0, 1, 2, 3]);
    expect(slots.queued).to.equal(0);
  });

  it('frees the slot when the upload fails', async () => {
    const slots = new UploadSlots(1);
    await slots.run(() => Promise.reject(new Error('refused'))).catch(() => undefined);
    expect(await slots.run(() => Promise.resolve('next'))).to.equal('next');
  });
});
