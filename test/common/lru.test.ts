import { expect } from 'chai';
import { Lru } from '../../src/common/lru.js';

/** The LRU every cache is built on: bounded by weight, least recently used first out, its weight told as it is. */
describe('common: Lru', () => {
  it('drops the least recently used past its bound, and tells its weight', () => {
    const lru = new Lru<string, string>(10, (v) => v.length);
    lru.set('a', 'aaaa');
    lru.set('b', 'bbbb');
    expect(lru.get('a')).to.equal('aaaa'); // a is now the most recently used
    lru.set('c', 'cccc'); // 12 > 10: b goes
    expect([lru.get('a'), lru.get('b'), lru.get('c')]).to.deep.equal(['aaaa', undefined, 'cccc']);
    expect(lru.weight).to.equal(8);
    lru.set('a', 'a'); // replaced: its old weight no longer counts
    expect(lru.weight).to.equal(5);
    lru.set('big', 'x'.repeat(11)); // heavier than the bound: not kept, nothing dropped for it
    expect([lru.get('big'), lru.weight]).to.deep.equal([undefined, 5]);
  });

  it('deleteWhere forgets exactly the entries whose key matches, and their weight', () => {
    const lru = new Lru<string, string>(100, (v) => v.length);
    for (const key of ['1:a', '1:b', '12:a', '2:a']) lru.set(key, key);
    lru.deleteWhere((key) => key.startsWith('1:'));
    expect(['1:a', '1:b', '12:a', '2:a'].map((k) => lru.get(k))).to.deep.equal([undefined, undefined, '12:a', '2:a']);
    expect(lru.weight).to.equal(7);
    lru.deleteWhere(() => true);
    expect(lru.weight).to.equal(0);
  });
});
