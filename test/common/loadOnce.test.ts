import { expect } from 'chai';
import { loadOnce } from '../../src/common/loadOnce.js';

describe('common/loadOnce', () => {
  it('loads once for callers that come together and for those after it succeeded', async () => {
    let loads = 0;
    const get = loadOnce(async () => {
      loads++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { loaded: loads };
    });
    const [a, b] = await Promise.all([get(), get()]);
    const c = await get();
    expect(loads).to.equal(1);
    expect(a).to.equal(b);
    expect(c).to.equal(a);
  });

  it('forgets a failed load: the callers that shared it fail, the next caller tries again', async () => {
    let loads = 0;
    const get = loadOnce(async () => {
      loads++;
      if (loads === 1) throw new Error('not readable yet');
      return 'loaded';
    });
    const shared = await Promise.allSettled([get(), get()]);
    expect(shared.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect(loads).to.equal(1);
    expect(await get()).to.equal('loaded');
    expect(await get()).to.equal('loaded');
    expect(loads).to.equal(2);
  });
});
