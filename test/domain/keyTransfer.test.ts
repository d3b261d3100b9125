import { expect } from 'chai';
import { Volume } from 'memfs';
import { silentLogger } from '../../src/common/log.js';
import { InvalidInput } from '../../src/domain/errors.js';
import { authenticate, createKey, revokeKey } from '../../src/domain/keys.js';
import { exportKeys, importKeys, KEY_EXPORT_KIND } from '../../src/domain/keyTransfer.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { keyFilesText } from '../support/keyFiles.js';

/** `key export` on one node, `key import` on another: the same secrets work there, nothing else changes. */

function store(): { keys: KeyStore; vol: Volume } {
  const vol = new Volume();
  vol.mkdirSync('/data', { recursive: true });
  return { vol, keys: new KeyStore({ fs: vol.promises as unknown as FsPromises, dataDir: '/data', logger: silentLogger }) };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(InvalidInput);
    return (err as InvalidInput).message + JSON.stringify((err as InvalidInput).data);
  }
  return expect.fail('expected a refusal');
}

describe('domain/keyTransfer', () => {
  it('moves an organization\'s keys (hashes only) to another store, where the same secrets act as before', async () => {
    const a = store();
    const admin = await createKey({ keys: a.keys, orgId: 'acme', role: 'admin', name: 'root' });
    const scoped = await createKey({ keys: a.keys, orgId: 'acme', role: 'writer', name: 'docs', scopes: ['docs/'] });
    const gone = await createKey({ keys: a.keys, orgId: 'acme', role: 'reader', name: 'gone' });
    await revokeKey({ keys: a.keys, keyId: gone.key.id });
    await createKey({ keys: a.keys, orgId: 'other', role: 'admin', name: 'not moved' });

    const exported = await exportKeys({ keys: a.keys, orgId: 'acme', clock: () => new Date('2025-01-02T03:04:05Z') });
    expect(exported).to.include({ kind: KEY_EXPORT_KIND, version: 1, orgId: 'acme', exportedAt: '2025-01-02T03:04:05.000Z' });
    expect(exported.keys.map((k) => k.name).sort()).to.deep.equal(['docs', 'gone', 'root']);
    const text = JSON.stringify(exported);
    for (const s of [admin.secret, scoped.secret, gone.secret]) expect(text).not.to.include(s.slice(-43));

    const b = store();
    const result = await importKeys({ keys: b.keys, orgId: 'acme', text });
    expect(result.added).to.have.length(3);
    expect(result.unchanged).to.deep.equal([]);
    expect(await authenticate({ keys: b.keys, secret: admin.secret })).to.deep.include({ orgId: 'acme', role: 'admin', keyId: admin.key.id });
    expect(await authenticate({ keys: b.keys, secret: scoped.secret })).to.deep.include({ role: 'writer', scopes: ['docs/'] });
    expect(await authenticate({ keys: b.keys, secret: gone.secret }), 'a revoked key stays revoked').to.equal(null);
    expect(await b.keys.list('other')).to.deep.equal([]);

    // Run again: nothing changes (last use may differ between nodes and does not count).
    await authenticate({ keys: b.keys, secret: admin.secret });
    await b.keys.flushUsage();
    const again = await importKeys({ keys: b.keys, orgId: 'acme', text });
    expect(again.added).to.deep.equal([]);
    expect(again.unchanged).to.have.length(3);
    expect(await b.keys.list()).to.have.length(3);
  });

  it('refuses, changing nothing: another organization, a key id taken by a different key, a bad record, not an export', async () => {
    const a = store();
    const k = await createKey({ keys: a.keys, orgId: 'acme', role: 'admin', name: 'root' });
    const exported = await exportKeys({ keys: a.keys, orgId: 'acme' });
    const b = store();
    await createKey({ keys: b.keys, orgId: 'acme', role: 'reader', name: 'local' });

    expect(await refusal(importKeys({ keys: b.keys, orgId: 'beta', text: JSON.stringify(exported) }))).to.include('organization "acme", not "beta"');
    const changedRole = { ...exported, keys: [{ ...exported.keys[0], role: 'reader' }] };
    await importKeys({ keys: b.keys, orgId: 'acme', text: JSON.stringify(exported) });
    const afterFirst = await keyFilesText(b.vol.promises.readFile, '/data');
    expect(await refusal(importKeys({ keys: b.keys, orgId: 'acme', text: JSON.stringify(changedRole) }))).to.include(`Key ${k.key.id} already exists here and differs`).and.include('role');
    const sameHash = { ...exported, keys: [{ ...exported.keys[0], id: 'key_00000000000000aa' }] };
    expect(await refusal(importKeys({ keys: b.keys, orgId: 'acme', text: JSON.stringify(sameHash) }))).to.include('same secret as key');
    expect(await keyFilesText(b.vol.promises.readFile, '/data')).to.equal(afterFirst);

    const c = store();
    const bad: Array<[unknown, string]> = [
      ['not json', 'not JSON'],
      [{ ...exported, kind: 'x' }, '"kind" must be'],
      [{ ...exported, version: 2 }, 'version 2 is not known'],
      [{ ...exported, keys: 'x' }, '"keys" list'],
      [{ ...exported, keys: [{ ...exported.keys[0], hash: 'secret' }] }, '"hash" must be a SHA-256'],
      [{ ...exported, keys: [{ ...exported.keys[0], orgId: 'beta' }] }, '"orgId" must be "acme"'],
      [{ ...exported, keys: [{ ...exported.keys[0], role: 'root' }] }, 'Unknown role'],
      [{ ...exported, keys: [{ ...exported.keys[0], createdAt: 'yesterday' }] }, '"createdAt" must be a time'],
      [{ ...exported, keys: [{ ...exported.keys[0], secret: 'ks_x' }] }, '"secret" is not a field'],
      [{ ...exported, keys: [exported.keys[0], exported.keys[0]] }, 'twice'],
    ];
    for (const [value, message] of bad) {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      expect(await refusal(importKeys({ keys: c.keys, orgId: 'acme', text })), message).to.include(message);
    }
    expect(await keyFilesText(c.vol.promises.readFile, '/data')).to.equal('keys.json: none\nkeys.log: none\n');
  });
});
