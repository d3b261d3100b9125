import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { commitCount, fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { expectRefusedNoCommit, ISO, keyWithId, MALFORMED_BODIES, MSG4, sendRaw, UNKNOWN_KEY, urlOf } from './adminApi.js';
import { del, expectError, get, itemOf, itemsOf, list, put } from './helpers.js';

interface KeyView {
  id: string;
  organizationId: string;
  name: string;
  role: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

// scopes: null for a key without scopes (the whole organization); see test/http/scopes.test.ts.
const KEY_FIELDS = ['createdAt', 'id', 'lastUsedAt', 'name', 'organizationId', 'revokedAt', 'role', 'scopes'];
const SECRET = /^ks_[a-z0-9-]+_[A-Za-z0-9_-]{43}$/;

function listKeys(server: TestServer, key: string): Promise<ApiResponse> {
  return api(urlOf(server, '/keys'), { key });
}

async function keysOf(server: TestServer, key: string): Promise<KeyView[]> {
  const res = await listKeys(server, key);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  const keys = res.body?.data?.keys as KeyView[];
  expect(keys).to.be.an('array');
  return keys;
}

function createKey(server: TestServer, key: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, '/keys'), { method: 'POST', key, body });
}

function revokeKey(server: TestServer, key: string, keyId: string): Promise<ApiResponse> {
  return api(urlOf(server, `/keys/${keyId}`), { method: 'DELETE', key });
}

/** A successful POST /keys: the secret and the key as presented. */
function created(res: ApiResponse): { secret: string; key: KeyView } {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  expect(Object.keys(res.body?.data ?? {}).sort()).to.deep.equal(['key', 'secret']);
  return { secret: res.body?.data?.secret as string, key: res.body?.data?.key as KeyView };
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

describe('HTTP key management: GET/POST /keys, DELETE /keys/{keyId}', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: string;
  let writer: { secret: string; id: string };
  let reader: { secret: string; id: string };
  let other: string;
  let otherKey: { secret: string; id: string };
  let commits: number;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = await keyWithId(server, 'writer', 'the writer');
    reader = await keyWithId(server, 'reader', 'the reader');
    other = await server.org('other');
    otherKey = await keyWithId(server, 'reader', 'other reader', 'other');
    expect((await put(server, admin, 'k/doc.md', { content: 'doc' })).status).to.equal(200);
    commits = await commitCount(server.gitdir());
  });
  after(() => server?.close());

  describe('GET /keys', () => {
    it("admin: the organization's keys, without hash or secret", async () => {
      const keys = await keysOf(server, admin);
      for (const k of keys) {
        expect(Object.keys(k).sort()).to.deep.equal(KEY_FIELDS);
        expect(k.organizationId).to.equal('default');
        expect(k.createdAt).to.match(ISO);
      }
      const byId = new Map(keys.map((k) => [k.id, k]));
      expect(byId.get(writer.id)).to.deep.include({ name: 'the writer', role: 'writer', revokedAt: null });
      expect(byId.get(reader.id)).to.deep.include({ name: 'the reader', role: 'reader', revokedAt: null });
      expect(keys.filter((k) => k.role === 'admin').length, 'the first admin key').to.equal(1);
      expect(byId.has(otherKey.id), "another organization's key").to.equal(false);
      expect(keys.length).to.equal(3);
    });

    it('the response holds no secret and no hash of one', async () => {
      const text = JSON.stringify((await listKeys(server, admin)).body);
      for (const secret of [admin, writer.secret, reader.secret]) {
        expect(text).to.not.contain(secret);
        expect(text).to.not.contain(sha256(secret));
      }
      expect(text).to.not.match(/"(hash|secret)"/);
    });

    it('reader and writer: 403 Forbidden — requires knowledge:admin permission', async () => {
      expectError(await listKeys(server, reader.secret), 403, MSG4.forbiddenAdmin);
      expectError(await listKeys(server, writer.secret), 403, MSG4.forbiddenAdmin);
    });

    it("another organization's admin lists only its own keys", async () => {
      const keys = await keysOf(server, other);
      expect(keys.map((k) => k.organizationId)).to.deep.equal(['other', 'other']);
      expect(keys.map((k) => k.id)).to.include(otherKey.id);
      expect(keys.map((k) => k.id)).to.not.include(writer.id);
    });

    it('wrong method: 405', async () => {
      expectError(await api(urlOf(server, '/keys'), { method: 'PUT', key: admin, body: { name: 'x', role: 'reader' } }), 405);
      expectError(await api(urlOf(server, `/keys/${writer.id}`), { method: 'PATCH', key: admin, body: { role: 'admin' } }), 405);
      expect((await keysOf(server, admin)).find((k) => k.id === writer.id)?.role).to.equal('writer');
    });

    it('a query parameter: 400; a missing or unknown key: 401', async () => {
      expectError(await api(urlOf(server, '/keys?all=1'), { key: admin }), 400);
      expectError(await api(urlOf(server, '/keys')), 401, MSG4.invalidKey);
      expectError(await listKeys(server, UNKNOWN_KEY), 401, MSG4.invalidKey);
    });
  });

  describe('POST /keys {name, role}', () => {
    let newReader: { secret: string; key: KeyView };

    it('returns the secret once and the key without its hash; the secret works at once with its role', async () => {
      const before = Date.now();
      newReader = created(await createKey(server, admin, { name: 'ci bot', role: 'reader' }));
      expect(newReader.secret).to.match(SECRET);
      expect(Object.keys(newReader.key).sort()).to.deep.equal(KEY_FIELDS);
      expect(newReader.key).to.deep.include({ organizationId: 'default', name: 'ci bot', role: 'reader', revokedAt: null, lastUsedAt: null });
      expect(Date.parse(newReader.key.createdAt)).to.be.at.least(before - 1000);
      expect(JSON.stringify(newReader.key)).to.not.contain(sha256(newReader.secret));
      // Its very first request is accepted, with a reader's rights.
      expect(itemOf(await get(server, newReader.secret, 'k/doc.md')).content).to.equal('doc');
      expectError(await put(server, newReader.secret, 'k/doc.md', { content: 'no' }), 403, MSG4.forbiddenWrite);
    });

    it('GET /keys lists it, without its secret or hash', async () => {
      const res = await listKeys(server, admin);
      const keys = res.body?.data?.keys as KeyView[];
      const listed = keys.find((k) => k.id === newReader.key.id);
      expect(listed).to.deep.include({ name: 'ci bot', role: 'reader', organizationId: 'default', revokedAt: null, createdAt: newReader.key.createdAt });
      const text = JSON.stringify(res.body);
      expect(text).to.not.contain(newReader.secret);
      expect(text).to.not.contain(sha256(newReader.secret));
    });

    it('a writer key may write but not delete; an admin key may manage keys', async () => {
      const w = created(await createKey(server, admin, { name: 'writer bot', role: 'writer' }));
      expect((await put(server, w.secret, 'k/by-bot.md', { content: 'bot' })).status).to.equal(200);
      expectError(await del(server, w.secret, 'k/by-bot.md'), 403, MSG4.forbiddenAdmin);
      const a = created(await createKey(server, admin, { name: 'admin bot', role: 'admin' }));
      expect(a.secret).to.not.equal(w.secret);
      expect((await keysOf(server, a.secret)).map((k) => k.id)).to.include.members([w.key.id, a.key.id, newReader.key.id]);
    });

    it("another organization's admin creates keys in its own organization only", async () => {
      const k = created(await createKey(server, other, { name: 'their bot', role: 'admin' }));
      expect(k.key.organizationId).to.equal('other');
      expectError(await get(server, k.secret, 'k/doc.md'), 404, MSG4.notFound);
      expect(itemsOf(await list(server, k.secret)).map((i) => i.path)).to.not.include('k/doc.md');
      expect((await keysOf(server, admin)).map((key) => key.id)).to.not.include(k.key.id);
    });

    it('reader and writer: 403, no key created', async () => {
      const count = (await keysOf(server, admin)).length;
      expectError(await createKey(server, reader.secret, { name: 'sneaky', role: 'admin' }), 403, MSG4.forbiddenAdmin);
      expectError(await createKey(server, writer.secret, { name: 'sneaky', role: 'admin' }), 403, MSG4.forbiddenAdmin);
      const keys = await keysOf(server, admin);
      expect(keys.length).to.equal(count);
      expect(keys.map((k) => k.name)).to.not.include('sneaky');
    });

    it('a missing or unknown key: 401, no key created', async () => {
      const count = (await keysOf(server, admin)).length;
      expectError(await api(urlOf(server, '/keys'), { method: 'POST', body: { name: 'anon', role: 'admin' } }), 401, MSG4.invalidKey);
      expectError(await createKey(server, UNKNOWN_KEY, { name: 'anon', role: 'admin' }), 401, MSG4.invalidKey);
      expect((await keysOf(server, admin)).length).to.equal(count);
    });

    describe('bad bodies: 4xx, no key created, no commit', () => {
      let count: number;
      before(async () => {
        count = (await keysOf(server, admin)).length;
      });

      const cases: { name: string; body: unknown; message?: RegExp }[] = [
        { name: 'missing name', body: { role: 'reader' }, message: /name/ },
        { name: 'missing role', body: { name: 'x' }, message: /role/ },
        { name: 'empty object', body: {} },
        { name: 'unknown role', body: { name: 'x', role: 'superuser' }, message: /superuser/ },
        { name: 'a permission instead of a role', body: { name: 'x', role: 'knowledge:admin' } },
        { name: 'name as a number', body: { name: 5, role: 'reader' }, message: /name/ },
        { name: 'role as an array', body: { name: 'x', role: ['reader'] }, message: /role/ },
        { name: 'name null', body: { name: null, role: 'reader' }, message: /name/ },
        { name: 'empty name', body: { name: '', role: 'reader' } },
        { name: 'name with angle brackets', body: { name: 'evil <x@y>', role: 'reader' } },
        { name: 'name with a newline', body: { name: 'two\nlines', role: 'reader' } },
        { name: 'name too long', body: { name: 'n'.repeat(101), role: 'reader' } },
        { name: 'unknown field', body: { name: 'x', role: 'reader', orgId: 'other' }, message: /orgId/ },
      ];
      for (const c of cases) {
        it(c.name, async () => {
          await expectRefusedNoCommit(server, () => createKey(server, admin, c.body), 400, c.message);
        });
      }
      for (const c of MALFORMED_BODIES) {
        it(c.name, async () => {
          await expectRefusedNoCommit(server, () => sendRaw(server, admin, 'POST', '/keys', c.body, c.contentType), c.status);
        });
      }
      it('no key was created', async () => {
        const keys = await keysOf(server, admin);
        expect(keys.length).to.equal(count);
        expect((await keysOf(server, other)).map((k) => k.name)).to.not.include('x');
      });
    });
  });

  describe('DELETE /keys/{keyId}', () => {
    it('revokes: the key is listed as revoked and gets 401 on its very next request', async () => {
      const victim = created(await createKey(server, admin, { name: 'short-lived', role: 'writer' }));
      expect((await get(server, victim.secret, 'k/doc.md')).status).to.equal(200);
      const before = Date.now();
      const res = await revokeKey(server, admin, victim.key.id);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const revoked = res.body?.data?.key as KeyView;
      expect(Object.keys(revoked).sort()).to.deep.equal(KEY_FIELDS);
      expect(revoked.id).to.equal(victim.key.id);
      expect(revoked.revokedAt).to.be.a('string').and.match(ISO);
      expect(Date.parse(revoked.revokedAt as string)).to.be.at.least(before - 1000);
      // No wait: the very next request.
      expectError(await get(server, victim.secret, 'k/doc.md'), 401, MSG4.invalidKey);
      expectError(await put(server, victim.secret, 'k/doc.md', { content: 'late' }), 401, MSG4.invalidKey);
      expect((await keysOf(server, admin)).find((k) => k.id === victim.key.id)?.revokedAt).to.equal(revoked.revokedAt);
      expect(itemOf(await get(server, admin, 'k/doc.md')).content).to.equal('doc');
    });

    it('a key added outside the API (as the CLI does) can be revoked too', async () => {
      const res = await revokeKey(server, admin, reader.id);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expectError(await list(server, reader.secret), 401, MSG4.invalidKey);
    });

    it("another organization's key: 404 API key not found, and it keeps working", async () => {
      expectError(await revokeKey(server, admin, otherKey.id), 404, MSG4.keyNotFound);
      expect((await list(server, otherKey.secret)).status).to.equal(200);
      expect((await keysOf(server, other)).find((k) => k.id === otherKey.id)?.revokedAt).to.equal(null);
    });

    it("another organization's admin may not revoke this organization's keys: 404", async () => {
      expectError(await revokeKey(server, other, writer.id), 404, MSG4.keyNotFound);
      expect((await put(server, writer.secret, 'k/still.md', { content: 'still works' })).status).to.equal(200);
    });

    it('an unknown key id: 404 API key not found', async () => {
      expectError(await revokeKey(server, admin, 'key_0000000000000000'), 404, MSG4.keyNotFound);
      expectError(await revokeKey(server, admin, 'nope'), 404, MSG4.keyNotFound);
    });

    it('reader and writer: 403, the key stays valid', async () => {
      const target = created(await createKey(server, admin, { name: 'target', role: 'reader' }));
      expectError(await revokeKey(server, writer.secret, target.key.id), 403, MSG4.forbiddenAdmin);
      const r = created(await createKey(server, admin, { name: 'a reader', role: 'reader' }));
      expectError(await revokeKey(server, r.secret, target.key.id), 403, MSG4.forbiddenAdmin);
      expect((await list(server, target.secret)).status).to.equal(200);
    });

    it('a missing or unknown key: 401, the key stays valid', async () => {
      expectError(await api(urlOf(server, `/keys/${writer.id}`), { method: 'DELETE' }), 401, MSG4.invalidKey);
      expectError(await revokeKey(server, UNKNOWN_KEY, writer.id), 401, MSG4.invalidKey);
      expect((await list(server, writer.secret)).status).to.equal(200);
    });
  });

  // Child suites run after a suite's own tests: this one runs last.
  describe('at the end', () => {
    it('key management made no commit; git fsck --strict is clean', async () => {
      // Two item PUTs were made in between (k/by-bot.md, k/still.md); nothing else.
      expect(await commitCount(server.gitdir())).to.equal(commits + 2);
      await fsckStrict(server.gitdir());
      await fsckStrict(server.gitdir('other'));
    });
  });
});
