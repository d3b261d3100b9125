import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { Volume } from 'memfs';
import { InvalidInput, KeyNotFound } from '../../src/domain/errors.js';
import { authenticate, createKey, hashSecret, KEY_PREFIX, keyOrg, revokeKey, SecretHashes, validateKeyName, validateRole } from '../../src/domain/keys.js';
import { silentLogger } from '../../src/common/log.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import { KeyStore, type KeyRecord } from '../../src/storage/keys/keyStore.js';
import { keyFilesText, storedKeyRecords } from '../support/keyFiles.js';

/** Random keys with a `ks_` prefix, stored only as a SHA-256, refused when missing/unknown/revoked. */

/** Where the random part of an `acme` key starts (after `ks_acme_`). */
const RANDOM_AT = 'ks_acme_'.length;

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  expect.fail('expected a rejection');
}

describe('domain/keys', () => {
  let vol: Volume;
  let fs: FsPromises;
  let keys: KeyStore;

  beforeEach(() => {
    vol = new Volume();
    fs = vol.promises as unknown as FsPromises;
    vol.mkdirSync('/data', { recursive: true });
    keys = new KeyStore({ fs, dataDir: '/data', logger: silentLogger });
  });

  describe('createKey', () => {
    it('returns ks_<org>_ and 43 base64url characters (256 bits): the organization readable, the rest random', async () => {
      const { secret } = await createKey({ keys, orgId: 'acme', role: 'writer', name: 'ci' });
      expect(KEY_PREFIX).to.equal('ks_');
      expect(secret.startsWith('ks_acme_')).to.equal(true);
      expect(secret).to.match(/^ks_acme_[A-Za-z0-9_-]{43}$/);
      const raw = Buffer.from(secret.slice(RANDOM_AT), 'base64url');
      expect(raw.length).to.equal(32);
      expect(keyOrg(secret)).to.equal('acme');
      const long = await createKey({ keys, orgId: `a-${'9'.repeat(61)}`, role: 'reader', name: 'long' });
      expect(keyOrg(long.secret)).to.equal(`a-${'9'.repeat(61)}`);
    });

    it('reads the organization of a key without a look-up: the first "_" after ks_ ends it; legacy keys name none', () => {
      const random = 'Ab_-'.repeat(10) + 'xy_';
      expect(random).to.have.length(43);
      expect(keyOrg(`ks_acme_${random}`)).to.equal('acme');
      expect(keyOrg(`ks_a-b-0_${random}`)).to.equal('a-b-0');
      // 46 characters: the old shape, whatever "_" the random part holds.
      expect(keyOrg(`ks_${random}`)).to.equal(null);
      for (const bad of [`ks_Acme_${random}`, `ks_-acme_${random}`, `ks__${random}`, `ks_acme_${random}x`, `ks_acme_${random.slice(1)}`, `ks_${'a'.repeat(64)}_${random}`, 'ks_acme_', '']) {
        expect(keyOrg(bad), bad).to.equal(undefined);
      }
    });

    it('draws every secret afresh: 200 keys, 200 distinct secrets, bits vary in every byte', async () => {
      const secrets = new Set<string>();
      const seen = Array.from({ length: 32 }, () => new Set<number>());
      for (let i = 0; i < 200; i++) {
        const { secret } = await createKey({ keys, orgId: 'acme', role: 'reader', name: `k${i}` });
        secrets.add(secret);
        Buffer.from(secret.slice(RANDOM_AT), 'base64url').forEach((byte, at) => seen[at]?.add(byte));
      }
      expect(secrets.size).to.equal(200);
      // 200 uniform bytes per position take far more than 50 distinct values; a constant or counter would not.
      for (const values of seen) expect(values.size).to.be.greaterThan(50);
    });

    it('stores the SHA-256 of the secret and never the secret itself', async () => {
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'root', clock: () => new Date('2024-05-01T10:00:00Z') });
      expect(key.hash).to.equal(sha256(secret));
      expect(hashSecret(secret)).to.equal(sha256(secret));
      expect(key).to.include({ orgId: 'acme', role: 'admin', name: 'root', createdAt: '2024-05-01T10:00:00.000Z', revokedAt: null, lastUsedAt: null });
      expect(key.id).to.match(/^key_[0-9a-f]{16}$/);
      const stored = await keyFilesText(fs.readFile, '/data');
      expect(stored).to.include('keys.log:\n{"key":');
      expect(stored).to.include(sha256(secret));
      expect(stored).not.to.include(secret);
      expect(stored).not.to.include(secret.slice(RANDOM_AT));
      expect(JSON.stringify(vol.toJSON())).not.to.include(secret.slice(RANDOM_AT));
      const listed = await keys.list('acme');
      expect(listed).to.have.length(1);
      expect(JSON.stringify(listed)).not.to.include(secret.slice(RANDOM_AT));
    });

    it('refuses an unknown role and a bad name, storing nothing', async () => {
      for (const role of ['boss', 'Admin', '', 'toString']) {
        const err = await rejection(createKey({ keys, orgId: 'acme', role, name: 'x' }));
        expect(err).to.be.instanceOf(InvalidInput);
      }
      for (const name of ['', 'a<b', 'b>c', 'line\nbreak', ' padded', 'x'.repeat(101), 'tab\there', 'del\u007f']) {
        const err = await rejection(createKey({ keys, orgId: 'acme', role: 'reader', name }));
        expect(err, JSON.stringify(name)).to.be.instanceOf(InvalidInput);
      }
      expect(await keys.list()).to.deep.equal([]);
    });

    it('validates roles and names on their own', () => {
      expect(validateRole('writer')).to.equal('writer');
      expect(() => validateRole('superuser')).to.throw(InvalidInput, /Unknown role "superuser"/);
      expect(validateKeyName('CI bot (prod)')).to.equal('CI bot (prod)');
      expect(validateKeyName('x'.repeat(100))).to.have.length(100);
    });
  });

  describe('SecretHashes (the hashes of secrets seen lately)', () => {
    it('gives each secret its own hash, also secrets that share their last characters (and so a slot)', () => {
      const hashes = new SecretHashes();
      const tail = 'Zz';
      const secrets = Array.from({ length: 50 }, (_, i) => `ks_acme_${String(i).padStart(41, 'A')}${tail}`);
      for (const s of secrets) {
        expect(hashes.kept(s)).to.equal(undefined);
        hashes.remember(s, sha256(s));
      }
      for (let round = 0; round < 3; round++) for (const s of secrets) expect(hashes.kept(s), s).to.equal(sha256(s));
      expect(hashes.kept(`ks_acme_${'B'.repeat(41)}${tail}`)).to.equal(undefined);
    });

    it('a kept hash never stands in for the key check: a key revoked after it authenticated is refused', async () => {
      const hashes = new SecretHashes();
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'reader', name: 'r' });
      for (let i = 0; i < 3; i++) expect(await authenticate({ keys, secret, hashes })).to.include({ keyId: key.id });
      await revokeKey({ keys, keyId: key.id });
      expect(await authenticate({ keys, secret, hashes })).to.equal(null);
    });
  });

  describe('authenticate', () => {
    it('returns the actor for a valid key', async () => {
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'writer', name: 'ci' });
      const actor = await authenticate({ keys, secret });
      expect(actor).to.deep.equal({ keyId: key.id, keyName: 'ci', orgId: 'acme', role: 'writer' });
    });

    it('returns null for a missing key', async () => {
      await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      expect(await authenticate({ keys, secret: undefined })).to.equal(null);
      expect(await authenticate({ keys, secret: '' })).to.equal(null);
    });

    it('returns null for malformed keys, even ones whose hash is on file', async () => {
      const { secret } = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      const malformed = [
        'ks_',
        'ks_short',
        secret.slice(0, -1),
        `${secret}A`,
        `kx_${secret.slice(3)}`,
        secret.slice(3),
        `KS_${secret.slice(3)}`,
        `ks_ACME_${secret.slice(RANDOM_AT)}`,
        `ks_acme-${secret.slice(RANDOM_AT)}`,
        ` ${secret}`,
        `${secret}\n`,
        `ks_${'='.repeat(43)}`,
        `ks_${'+'.repeat(43)}`,
      ];
      for (const bad of malformed) expect(await authenticate({ keys, secret: bad }), JSON.stringify(bad)).to.equal(null);
      // A record whose hash matches a malformed secret must still not let it in.
      const odd = 'ks_not-a-real-key';
      await keys.add({ ...(await keys.list())[0], id: 'key_odd', hash: sha256(odd) } as KeyRecord);
      expect(await authenticate({ keys, secret: odd })).to.equal(null);
    });

    it('accepts a legacy key (ks_ and 43 characters, no organization): its record says whose it is', async () => {
      const legacy = `ks_${Buffer.alloc(32, 7).toString('base64url')}`;
      expect(legacy).to.have.length(46);
      await keys.add({ id: 'key_0123456789abcdef', orgId: 'acme', name: 'old', role: 'reader', hash: sha256(legacy), createdAt: '2024-01-01T00:00:00.000Z', revokedAt: null, lastUsedAt: null });
      expect(await authenticate({ keys, secret: legacy })).to.deep.equal({ keyId: 'key_0123456789abcdef', keyName: 'old', orgId: 'acme', role: 'reader' });
    });

    it('refuses a key whose organization part is not its record\'s organization, even with the hash on file', async () => {
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      // Another organization's name on the same random part: a different hash, unknown.
      const altered = `ks_beta_${secret.slice(RANDOM_AT)}`;
      expect(await authenticate({ keys, secret: altered })).to.equal(null);
      // Even a record holding that very hash, but kept for acme (an import under the wrong organization), lets nothing in.
      await keys.add({ ...key, id: 'key_fedcba9876543210', hash: sha256(altered) });
      expect(await authenticate({ keys, secret: altered })).to.equal(null);
      expect(await authenticate({ keys, secret })).not.to.equal(null);
    });

    it('returns null for a well-formed unknown key', async () => {
      await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      expect(await authenticate({ keys, secret: `ks_${'A'.repeat(43)}` })).to.equal(null);
      expect(await authenticate({ keys, secret: `ks_acme_${'A'.repeat(43)}` })).to.equal(null);
      const other = new KeyStore({ fs: new Volume().promises as unknown as FsPromises, dataDir: '/elsewhere', logger: silentLogger });
      const { secret: foreign } = await createKey({ keys: other, orgId: 'acme', role: 'admin', name: 'b' });
      expect(await authenticate({ keys, secret: foreign })).to.equal(null);
    });

    it('returns null for a revoked key, and only for that one', async () => {
      const a = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      const b = await createKey({ keys, orgId: 'acme', role: 'reader', name: 'b' });
      expect(await authenticate({ keys, secret: a.secret })).not.to.equal(null);
      const revoked = await revokeKey({ keys, keyId: a.key.id, clock: () => new Date('2024-06-01T00:00:00Z') });
      expect(revoked.revokedAt).to.equal('2024-06-01T00:00:00.000Z');
      expect(await authenticate({ keys, secret: a.secret })).to.equal(null);
      expect((await authenticate({ keys, secret: b.secret }))?.keyId).to.equal(b.key.id);
    });

    it('returns null for a key whose stored role is unknown', async () => {
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      await keys.update(key.id, (k) => {
        k.role = 'owner';
      });
      expect(await authenticate({ keys, secret })).to.equal(null);
    });

    it('records the use in memory; list shows it and flushUsage writes it', async () => {
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'reader', name: 'a' });
      const when = new Date('2024-07-01T12:00:00Z');
      await authenticate({ keys, secret, clock: () => when });
      const [listed] = await keys.list('acme');
      expect(listed?.lastUsedAt).to.equal(when.toISOString());
      expect(await keyFilesText(fs.readFile, '/data')).not.to.include(when.toISOString());
      await keys.flushUsage();
      const stored = await storedKeyRecords(fs.readFile, '/data');
      expect(stored.find((k) => k.id === key.id)?.lastUsedAt).to.equal(when.toISOString());
    });
  });

  describe('revokeKey', () => {
    it('refuses an unknown key id', async () => {
      const err = await rejection(revokeKey({ keys, keyId: 'key_0000000000000000' }));
      expect(err).to.be.instanceOf(KeyNotFound);
    });

    it("refuses another organization's key and leaves it active", async () => {
      const { key, secret } = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      const err = await rejection(revokeKey({ keys, keyId: key.id, orgId: 'globex' }));
      expect(err).to.be.instanceOf(KeyNotFound);
      expect(await authenticate({ keys, secret })).not.to.equal(null);
    });

    it('keeps the first revocation time when revoked twice', async () => {
      const { key } = await createKey({ keys, orgId: 'acme', role: 'admin', name: 'a' });
      await revokeKey({ keys, keyId: key.id, clock: () => new Date('2024-01-01T00:00:00Z') });
      const again = await revokeKey({ keys, keyId: key.id, clock: () => new Date('2025-01-01T00:00:00Z') });
      expect(again.revokedAt).to.equal('2024-01-01T00:00:00.000Z');
    });
  });
});
