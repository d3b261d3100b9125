import { expect } from 'chai';
import { KnowledgeError } from '../src/common/errors.js';

/**
 * The suite loads our modules as ES modules, as the built server runs them (.mocharc.json turns Node's
 * require(esm) off, so that mocha imports each test file instead of requiring it through tsx's CommonJS
 * hook). Under CommonJS a module imported at run time was a second copy of the one the static imports held,
 * whose classes `instanceof` did not know: a KnowledgeError's 429 once became a 500 that way in a test only.
 */
describe('test loading: our modules as ES modules, as in production', () => {
  it('this file is an ES module (no CommonJS require in its scope)', () => {
    expect(typeof require).to.equal('undefined');
  });

  it('a module imported at run time is the one the static imports hold, not a second copy', async () => {
    const late = await import('../src/domain/errors.js');
    expect(new late.InvalidInput({ reason: 'probe' })).to.be.instanceOf(KnowledgeError);
  });
});
