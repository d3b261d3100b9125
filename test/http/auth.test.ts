import { expect } from 'chai';
import { commitCount } from '../support/git.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import {
  createKeyWithId,
  del,
  expectError,
  expectTextItem,
  get,
  itemOf,
  itemsOf,
  itemUrl,
  list,
  LIST,
  MSG,
  put,
  revoke,
} from './helpers.js';

/** Every endpoint, as a request built from the headers that carry (or fail to carry) the key. */
const ENDPOINTS: { name: string; method: string; path: string; body?: unknown }[] = [
  { name: 'list', method: 'GET', path: LIST },
  { name: 'get (existing item)', method: 'GET', path: `${LIST}/items/docs/existing.md` },
  { name: 'get (absent item)', method: 'GET', path: `${LIST}/items/docs/absent.md` },
  { name: 'put', method: 'PUT', path: `${LIST}/items/docs/new.md`, body: { content: 'x' } },
  { name: 'put (existing item)', method: 'PUT', path: `${LIST}/items/docs/existing.md`, body: { content: 'changed' } },
  { name: 'delete', method: 'DELETE', path: `${LIST}/items/docs/existing.md` },
  { name: 'unknown route under /api', method: 'GET', path: '/api/v1/nope' },
  { name: 'unknown route /api', method: 'GET', path: '/api' },
  { name: 'wrong method on an item', method: 'POST', path: `${LIST}/items/docs/existing.md`, body: { content: 'x' } },
  { name: 'put with an invalid path', method: 'PUT', path: `${LIST}/items/Bad Path`, body: { content: 'x' } },
  { name: 'put with a malformed body', method: 'PUT', path: `${LIST}/items/docs/new.md`, body: '{not json' },
];

describe('HTTP auth: API keys', () => {
  let server: TestServer;
  let revoked: string;
  let commitsBefore: number;

  before(async () => {
    server = await startTestServer();
    const res = await put(server, server.adminKey, 'docs/existing.md', { content: 'existing' });
    expect(res.status).to.equal(200);
    const { secret, id, keys } = await createKeyWithId(server, 'admin');
    // The key works before it is revoked...
    expect((await list(server, secret)).status).to.equal(200);
    await revoke(keys, id);
    // ...and the server must notice the revocation (the key file is re-read at least every second).
    await sleep(1100);
    revoked = secret;
    commitsBefore = await commitCount(server.gitdir());
  });
  after(() => server?.close());

  const unknownKey = `ks_${'A'.repeat(43)}`;
  const keyCases: { name: string; headers: () => Record<string, string> }[] = [
    { name: 'missing key', headers: () => ({}) },
    { name: 'malformed key (Bearer garbage)', headers: () => ({ Authorization: 'Bearer not-a-key' }) },
    { name: 'malformed key (empty Bearer)', headers: () => ({ Authorization: 'Bearer ' }) },
    { name: 'malformed key (wrong scheme)', headers: () => ({ Authorization: `Basic ${server.adminKey}` }) },
    { name: 'malformed key (truncated)', headers: () => ({ Authorization: `Bearer ${server.adminKey.slice(0, -1)}` }) },
    { name: 'malformed X-API-Key', headers: () => ({ 'X-API-Key': 'ks_nope' }) },
    { name: 'unknown key (Bearer)', headers: () => ({ Authorization: `Bearer ${unknownKey}` }) },
    { name: 'unknown key (X-API-Key)', headers: () => ({ 'X-API-Key': unknownKey }) },
    { name: 'revoked key (Bearer)', headers: () => ({ Authorization: `Bearer ${revoked}` }) },
    { name: 'revoked key (X-API-Key)', headers: () => ({ 'X-API-Key': revoked }) },
  ];

  for (const keyCase of keyCases) {
    describe(keyCase.name, () => {
      for (const endpoint of ENDPOINTS) {
        it(`${endpoint.method} ${endpoint.path} (${endpoint.name}) -> 401 Invalid API key`, async () => {
          const headers = keyCase.headers();
          if (endpoint.body !== undefined) headers['Content-Type'] = 'application/json';
          const res = await api(`${server.url}${endpoint.path}`, {
            method: endpoint.method,
            headers,
            ...(endpoint.body !== undefined
              ? { body: typeof endpoint.body === 'string' ? endpoint.body : JSON.stringify(endpoint.body) }
              : {}),
          });
          expectError(res, 401, MSG.invalidKey);
        });
      }
    });
  }

  it('no unauthorized request changed anything', async () => {
    expect(await commitCount(server.gitdir())).to.equal(commitsBefore);
    const res = await get(server, server.adminKey, 'docs/existing.md');
    expect(res.status).to.equal(200);
    expect(itemOf(res).content).to.equal('existing');
    expectError(await get(server, server.adminKey, 'docs/new.md'), 404, MSG.notFound);
  });

  it('accepts the key as Authorization: Bearer', async () => {
    const res = await api(`${server.url}${LIST}`, { headers: { Authorization: `Bearer ${server.adminKey}` } });
    expect(itemsOf(res).map((i) => i.path)).to.include('docs/existing.md');
  });

  it('accepts the key as X-API-Key', async () => {
    const res = await api(`${server.url}${LIST}`, { headers: { 'X-API-Key': server.adminKey } });
    expect(itemsOf(res).map((i) => i.path)).to.include('docs/existing.md');
  });

  it('accepts X-API-Key on get, put and delete too', async () => {
    const headers = { 'X-API-Key': server.adminKey };
    const created = await api(itemUrl(server, 'xapi/a.md'), { method: 'PUT', headers, body: { content: 'via x-api-key' } });
    expect(created.status).to.equal(200);
    expect(itemOf(created).content).to.equal('via x-api-key');
    const fetched = await api(itemUrl(server, 'xapi/a.md'), { headers });
    expect(fetched.status).to.equal(200);
    expect(itemOf(fetched).content).to.equal('via x-api-key');
    const deleted = await api(itemUrl(server, 'xapi/a.md'), { method: 'DELETE', headers });
    expect(deleted.status).to.equal(200);
    expect(deleted.body).to.deep.equal({ success: true, data: { message: MSG.deleted } });
  });

  it('a freshly created key works (reader can list)', async () => {
    const reader = await server.key('reader');
    expect((await list(server, reader)).status).to.equal(200);
  });
});

describe('HTTP auth: role permissions', () => {
  let server: TestServer;
  let reader: string;
  let writer: string;
  let admin: string;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    reader = await server.key('reader');
    writer = await server.key('writer');
    expect((await put(server, admin, 'roles/base.md', { content: 'base' })).status).to.equal(200);
  });
  after(() => server?.close());

  it('reader can list and get', async () => {
    expect(itemsOf(await list(server, reader)).map((i) => i.path)).to.include('roles/base.md');
    const res = await get(server, reader, 'roles/base.md');
    expect(res.status).to.equal(200);
    expect(itemOf(res).content).to.equal('base');
  });

  it('reader PUT -> 403 requires knowledge:write, on a new and on an existing path, nothing changes', async () => {
    const before = await commitCount(server.gitdir());
    expectError(await put(server, reader, 'roles/new.md', { content: 'x' }), 403, MSG.forbiddenWrite);
    expectError(await put(server, reader, 'roles/base.md', { content: 'x' }), 403, MSG.forbiddenWrite);
    expect(await commitCount(server.gitdir())).to.equal(before);
    expectError(await get(server, admin, 'roles/new.md'), 404, MSG.notFound);
    expect(itemOf(await get(server, admin, 'roles/base.md')).content).to.equal('base');
  });

  it('writer can create and update', async () => {
    const created = await put(server, writer, 'roles/by-writer.md', { content: 'one' });
    expect(created.status).to.equal(200);
    const updated = await put(server, writer, 'roles/by-writer.md', { content: 'two' });
    expect(updated.status).to.equal(200);
    expect(itemOf(updated).content).to.equal('two');
  });

  it('writer and reader DELETE -> 403 requires knowledge:admin, the item stays', async () => {
    const before = await commitCount(server.gitdir());
    expectError(await del(server, writer, 'roles/base.md'), 403, MSG.forbiddenAdmin);
    expectError(await del(server, reader, 'roles/base.md'), 403, MSG.forbiddenAdmin);
    expect(await commitCount(server.gitdir())).to.equal(before);
    expect((await get(server, reader, 'roles/base.md')).status).to.equal(200);
  });
});

describe('HTTP auth: organization isolation', () => {
  let server: TestServer;
  let acme: string;
  let acmeReader: string;

  before(async () => {
    server = await startTestServer();
    acme = await server.org('acme');
    acmeReader = await server.key('reader', 'acme');
    expect((await put(server, server.adminKey, 'shared/doc.md', { content: 'default org' })).status).to.equal(200);
    expect((await put(server, server.adminKey, 'default-only.md', { content: 'mine' })).status).to.equal(200);
  });
  after(() => server?.close());

  it("another organization's path is not there (404) for its admin and reader", async () => {
    expectError(await get(server, acme, 'shared/doc.md'), 404, MSG.notFound);
    expectError(await get(server, acmeReader, 'default-only.md'), 404, MSG.notFound);
  });

  it("DELETE of another organization's path -> 404, and the item survives", async () => {
    expectError(await del(server, acme, 'default-only.md'), 404, MSG.notFound);
    expect((await get(server, server.adminKey, 'default-only.md')).status).to.equal(200);
  });

  it('the same path in two organizations holds two separate items', async () => {
    const res = await put(server, acme, 'shared/doc.md', { content: 'acme org' });
    expect(res.status).to.equal(200);
    const acmeItem = itemOf(res);
    expectTextItem(acmeItem, { orgId: 'acme', path: 'shared/doc.md', content: 'acme org' });
    const defaultItem = itemOf(await get(server, server.adminKey, 'shared/doc.md'));
    expectTextItem(defaultItem, { orgId: 'default', path: 'shared/doc.md', content: 'default org' });
    expect(acmeItem.id).to.not.equal(defaultItem.id);
    expect(itemOf(await get(server, acmeReader, 'shared/doc.md')).content).to.equal('acme org');
  });

  it('each list shows only its own organization', async () => {
    const acmeItems = itemsOf(await list(server, acme));
    expect(acmeItems.map((i) => i.path)).to.deep.equal(['shared/doc.md']);
    expect(acmeItems.every((i) => i.organizationId === 'acme')).to.equal(true);
    const defaultItems = itemsOf(await list(server, server.adminKey));
    expect(defaultItems.map((i) => i.path)).to.deep.equal(['default-only.md', 'shared/doc.md']);
    expect(defaultItems.every((i) => i.organizationId === 'default')).to.equal(true);
  });

  it("writing in one organization makes no commit in the other's repository", async () => {
    const before = await commitCount(server.gitdir('default'));
    expect((await put(server, acme, 'acme-only.md', { content: 'acme' })).status).to.equal(200);
    expect(await commitCount(server.gitdir('default'))).to.equal(before);
  });
});

describe('HTTP auth: item permission requirements', () => {
  let server: TestServer;
  let reader: string;
  let writer: string;
  let admin: string;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    reader = await server.key('reader');
    writer = await server.key('writer');
    const secret = await put(server, admin, 'perm/secret.md', {
      content: 'admins only',
      requiredReadPermission: 'knowledge:admin',
    });
    expect(secret.status, JSON.stringify(secret.body)).to.equal(200);
    expect(itemOf(secret).requiredReadPermission).to.equal('knowledge:admin');
    const locked = await put(server, admin, 'perm/locked.md', {
      content: 'admin writes',
      requiredWritePermission: 'knowledge:admin',
    });
    expect(locked.status, JSON.stringify(locked.body)).to.equal(200);
    expect(itemOf(locked).requiredWritePermission).to.equal('knowledge:admin');
    const open = await put(server, admin, 'perm/open.md', { content: 'open' });
    expect(open.status).to.equal(200);
  });
  after(() => server?.close());

  it('an item requiring knowledge:admin to read is left out of reader and writer lists', async () => {
    for (const key of [reader, writer]) {
      const paths = itemsOf(await list(server, key)).map((i) => i.path);
      expect(paths).to.include('perm/open.md');
      expect(paths).to.not.include('perm/secret.md');
    }
  });

  it('... and left out with paging, prefix and content=false as well', async () => {
    const paths = itemsOf(await list(server, reader, '?prefix=perm/&limit=10&content=false')).map((i) => i.path);
    expect(paths).to.deep.equal(['perm/locked.md', 'perm/open.md']);
  });

  it('... and is 404 on get for reader and writer', async () => {
    expectError(await get(server, reader, 'perm/secret.md'), 404, MSG.notFound);
    expectError(await get(server, writer, 'perm/secret.md'), 404, MSG.notFound);
  });

  it('... while the admin lists and gets it', async () => {
    expect(itemsOf(await list(server, admin)).map((i) => i.path)).to.include('perm/secret.md');
    const res = await get(server, admin, 'perm/secret.md');
    expect(res.status).to.equal(200);
    expect(itemOf(res).content).to.equal('admins only');
  });

  it('writer cannot overwrite an item it cannot read: 409, the path is taken and nothing more is said; nothing changes', async () => {
    const before = await commitCount(server.gitdir());
    const res = await put(server, writer, 'perm/secret.md', { content: 'overwritten' });
    // Not 403 "requires knowledge:admin": that would tell the writer the item exists and what it needs.
    expectError(res, 409, 'Path conflict: "perm/secret.md" is taken');
    expect(await commitCount(server.gitdir())).to.equal(before);
    expect(itemOf(await get(server, admin, 'perm/secret.md')).content).to.equal('admins only');
  });

  it('requiredWritePermission knowledge:admin: writer PUT -> 403 requires knowledge:admin, nothing changes', async () => {
    const before = await commitCount(server.gitdir());
    expectError(await put(server, writer, 'perm/locked.md', { content: 'changed' }), 403, MSG.forbiddenAdmin);
    expect(await commitCount(server.gitdir())).to.equal(before);
    expect(itemOf(await get(server, writer, 'perm/locked.md')).content).to.equal('admin writes');
  });

  it('requiredWritePermission knowledge:admin: the admin may still update it', async () => {
    const res = await put(server, admin, 'perm/locked.md', { content: 'admin changed' });
    expect(res.status).to.equal(200);
    expect(itemOf(res).content).to.equal('admin changed');
    expect(itemOf(res).requiredWritePermission).to.equal('knowledge:admin');
  });

  it('inherit resolves to the organization default: reader reads, writer writes an inherit item', async () => {
    const open = itemOf(await get(server, reader, 'perm/open.md'));
    expect(open.requiredReadPermission).to.equal('inherit');
    expect(open.requiredWritePermission).to.equal('inherit');
    const res = await put(server, writer, 'perm/open.md', { content: 'writer was here' });
    expect(res.status).to.equal(200);
    expect(itemOf(res).content).to.equal('writer was here');
    expect(itemOf(await get(server, reader, 'perm/open.md')).content).to.equal('writer was here');
  });

  it('requiredReadPermission knowledge:write: the writer and admin read it, the reader does not', async () => {
    const res = await put(server, admin, 'perm/writers.md', { content: 'for writers', requiredReadPermission: 'knowledge:write' });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expectError(await get(server, reader, 'perm/writers.md'), 404, MSG.notFound);
    expect(itemsOf(await list(server, reader)).map((i) => i.path)).to.not.include('perm/writers.md');
    expect(itemOf(await get(server, writer, 'perm/writers.md')).content).to.equal('for writers');
    expect(itemsOf(await list(server, writer)).map((i) => i.path)).to.include('perm/writers.md');
    expect(itemOf(await get(server, admin, 'perm/writers.md')).content).to.equal('for writers');
  });

  it('an admin changing only the permission fields makes a commit and keeps the content', async () => {
    expect((await put(server, admin, 'perm/flip.md', { content: 'same' })).status).to.equal(200);
    const before = await commitCount(server.gitdir());
    const res = await put(server, admin, 'perm/flip.md', { content: 'same', requiredReadPermission: 'knowledge:admin' });
    expect(res.status).to.equal(200);
    expect(itemOf(res).requiredReadPermission).to.equal('knowledge:admin');
    expect(itemOf(res).content).to.equal('same');
    expect(await commitCount(server.gitdir())).to.equal(before + 1);
    expectError(await get(server, reader, 'perm/flip.md'), 404, MSG.notFound);
  });

  it('an admin may set inherit explicitly, and the item becomes readable again', async () => {
    const res = await put(server, admin, 'perm/readable-again.md', {
      content: 'x',
      requiredReadPermission: 'knowledge:admin',
    });
    expect(res.status).to.equal(200);
    expectError(await get(server, reader, 'perm/readable-again.md'), 404, MSG.notFound);
    const reset = await put(server, admin, 'perm/readable-again.md', { content: 'x', requiredReadPermission: 'inherit' });
    expect(reset.status).to.equal(200);
    expect(itemOf(reset).requiredReadPermission).to.equal('inherit');
    expect((await get(server, reader, 'perm/readable-again.md')).status).to.equal(200);
  });

  const permissionFields: Record<string, string>[] = [
    { requiredReadPermission: 'knowledge:admin' },
    { requiredReadPermission: 'knowledge:read' },
    { requiredWritePermission: 'knowledge:admin' },
    { requiredWritePermission: 'knowledge:write' },
  ];
  for (const fields of permissionFields) {
    it(`writer sending ${JSON.stringify(fields)} -> 403 requires knowledge:admin (new and existing item)`, async () => {
      const before = await commitCount(server.gitdir());
      expectError(await put(server, writer, 'perm/writer-new.md', { content: 'x', ...fields }), 403, MSG.forbiddenAdmin);
      expectError(await put(server, writer, 'perm/open.md', { content: 'y', ...fields }), 403, MSG.forbiddenAdmin);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expectError(await get(server, admin, 'perm/writer-new.md'), 404, MSG.notFound);
    });
  }

  const badValues: Record<string, unknown>[] = [
    { requiredReadPermission: 'knowledge:everything' },
    { requiredReadPermission: 'admin' },
    { requiredReadPermission: '' },
    { requiredWritePermission: 'knowledge:root' },
    { requiredReadPermission: 5 },
  ];
  for (const fields of badValues) {
    it(`admin sending invalid ${JSON.stringify(fields)} -> 400, nothing created`, async () => {
      const before = await commitCount(server.gitdir());
      expectError(await put(server, admin, 'perm/bad-value.md', { content: 'x', ...fields }), 400);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expectError(await get(server, admin, 'perm/bad-value.md'), 404, MSG.notFound);
    });
  }
});
