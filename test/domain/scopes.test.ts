import { expect } from 'chai';
import { Volume } from 'memfs';
import { authenticate, createKey, hashSecret } from '../../src/domain/keys.js';
import { inScope, scopedPrefixes, validateScopes } from '../../src/domain/scopes.js';
import { silentLogger } from '../../src/common/log.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { storedKeyRecords } from '../support/keyFiles.js';

/** Scope validation and the key file: scoped keys add a field, and files written before it read as they did. */
describe('domain/scopes', () => {
  describe('validateScopes', () => {
    it('adds the trailing "/", sorts, and keeps folders that only share letters apart', () => {
      expect(validateScopes(['notes', 'docs/', 'docs-x'])).to.deep.equal(['docs-x/', 'docs/', 'notes/']);
    });

    it('refuses none, more than 50, repeats, overlaps and folders the path rules refuse', () => {
      const bad: Array<[string[], RegExp]> = [
        [[], /1 to 50/],
        [Array.from({ length: 51 }, (_, i) => `f${i}`), /1 to 50/],
        [['a', 'a/'], /given twice/],
        [['a/b/', 'a/'], /"a\/b\/" is inside scope "a\/"/],
        [['a/', 'b/', 'a/c/d/'], /inside scope "a\/"/],
        [['/a/'], /Invalid scope/],
        [['a//b/'], /Invalid scope/],
        [['A/'], /Invalid scope/],
        [['.git/'], /Invalid scope/],
        [['a/b/c/d/e/f/'], /Invalid scope/],
      ];
      for (const [scopes, message] of bad) expect(() => validateScopes(scopes), JSON.stringify(scopes)).to.throw(message);
    });
  });

  it('inScope and scopedPrefixes: a prefix is narrowed by the scopes, never widened', () => {
    const key = { scopes: ['docs/', 'notes/'] };
    expect(inScope(key, 'docs/a.md')).to.equal(true);
    expect(inScope(key, 'docsy.md')).to.equal(false);
    expect(inScope({}, 'anything.md')).to.equal(true);
    expect(scopedPrefixes(key, undefined)).to.deep.equal(['docs/', 'notes/']);
    expect(scopedPrefixes(key, 'docs/sub/')).to.deep.equal(['docs/sub/']);
    expect(scopedPrefixes({ scopes: ['a/b/', 'a/c/', 'd/'] }, 'a/')).to.deep.equal(['a/b/', 'a/c/']);
    expect(scopedPrefixes(key, 'secret/')).to.deep.equal([]);
    expect(scopedPrefixes({}, undefined)).to.equal(undefined);
  });

  describe('the key file', () => {
    let vol: Volume;
    let fs: FsPromises;
    beforeEach(() => {
      vol = new Volume();
      fs = vol.promises as unknown as FsPromises;
      vol.mkdirSync('/data', { recursive: true });
    });

    it('a keys.json written before scopes existed still authenticates, unscoped, and survives adding a scoped key', async () => {
      const old = 'ks_' + 'A'.repeat(43);
      // Exactly the layout (version 1, no scopes field) that servers before scopes wrote.
      const file = {
        version: 1,
        keys: [
          { id: 'key_old', orgId: 'default', name: 'admin', role: 'admin', hash: hashSecret(old), createdAt: '2026-01-01T00:00:00.000Z', revokedAt: null, lastUsedAt: null },
        ],
      };
      vol.writeFileSync('/data/keys.json', JSON.stringify(file, null, 2));
      const keys = new KeyStore({ fs, dataDir: '/data', logger: silentLogger });
      const actor = await authenticate({ keys, secret: old });
      expect(actor).to.deep.equal({ keyId: 'key_old', keyName: 'admin', orgId: 'default', role: 'admin' });

      const { secret } = await createKey({ keys, orgId: 'default', role: 'writer', name: 'agent', scopes: ['docs'] });
      expect(vol.readFileSync('/data/keys.json', 'utf8'), 'the old file is left as it was').to.equal(JSON.stringify(file, null, 2));
      const written = await storedKeyRecords(fs.readFile, '/data');
      expect(written[0]).to.not.have.property('scopes');
      expect(written[1]?.scopes).to.deep.equal(['docs/']);
      expect((await authenticate({ keys, secret: old }))?.scopes).to.equal(undefined);
      expect((await authenticate({ keys: new KeyStore({ fs, dataDir: '/data', logger: silentLogger }), secret }))?.scopes).to.deep.equal(['docs/']);
    });

    it('a key whose stored scopes are not a list of strings reaches nothing, not everything', async () => {
      const secret = 'ks_' + 'B'.repeat(43);
      const record = { id: 'key_x', orgId: 'default', name: 'x', role: 'admin', hash: hashSecret(secret), createdAt: '2026-01-01T00:00:00.000Z', revokedAt: null, lastUsedAt: null, scopes: 'docs/' };
      vol.writeFileSync('/data/keys.json', JSON.stringify({ version: 1, keys: [record] }));
      const actor = await authenticate({ keys: new KeyStore({ fs, dataDir: '/data', logger: silentLogger }), secret });
      expect(actor?.scopes).to.deep.equal([]);
    });
  });
});
