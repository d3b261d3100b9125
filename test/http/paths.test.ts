import { expect } from 'chai';
import { commitCount } from '../support/git.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { del, expectError, expectTextItem, get, itemOf, itemsOf, ITEMS, list, MSG, put, rawRequest } from './helpers.js';

/**
 * The path rules (see README, Paths), for every operation. `encoded` is what goes into the URL
 * after /items/ (already percent-encoded where needed); fetch sends it unchanged.
 */
const INVALID: { rule: string; encoded: string }[] = [
  { rule: 'empty', encoded: '' },
  { rule: 'longer than 255 characters', encoded: `${'a'.repeat(253)}.md` },
  { rule: 'longer than 255 characters (nested)', encoded: `${'abcdefghi/'.repeat(25)}abcdef.md` },
  { rule: 'uppercase letter', encoded: 'Docs/readme.md' },
  { rule: 'uppercase extension', encoded: 'readme.MD' },
  { rule: 'space', encoded: 'my%20file.md' },
  { rule: 'non-ASCII letter', encoded: 'caf%C3%A9.md' },
  { rule: 'other punctuation', encoded: 'a+b.md' },
  { rule: 'tilde', encoded: 'a~b.md' },
  { rule: 'backslash', encoded: 'a%5Cb.md' },
  { rule: 'NUL byte', encoded: 'a%00.md' },
  { rule: 'literal %2F after one decoding (%252F)', encoded: 'a%252Fb.md' },
  { rule: 'malformed percent-encoding', encoded: 'a%zz.md' },
  { rule: 'leading slash', encoded: '/a.md' },
  { rule: 'leading slash (encoded)', encoded: '%2Fa.md' },
  { rule: 'trailing slash', encoded: 'docs/a.md/' },
  { rule: 'trailing slash (folder)', encoded: 'docs/' },
  { rule: 'empty segment //', encoded: 'docs//a.md' },
  { rule: 'empty segment // (encoded)', encoded: 'docs%2F%2Fa.md' },
  { rule: 'segment starting with . (.trash)', encoded: '.trash/x.md' },
  { rule: 'segment starting with . (.knowledge)', encoded: '.knowledge/x.md' },
  { rule: 'segment starting with . (.git)', encoded: '.git/config.md' },
  { rule: 'nested segment starting with .', encoded: 'docs/.hidden/x.md' },
  { rule: 'file name starting with .', encoded: 'docs/.env.md' },
  { rule: 'dot file without extension', encoded: '.gitignore' },
  { rule: 'no extension', encoded: 'readme' },
  { rule: 'no extension (nested)', encoded: 'docs/readme' },
  { rule: 'ends with a dot', encoded: 'readme.' },
  { rule: 'extension with a hyphen only', encoded: 'readme.m-d' },
  { rule: '6 directory levels', encoded: 'a/b/c/d/e/f/g.md' },
];

/** Targets fetch would rewrite (dot segments, also percent-encoded ones): sent raw with node's http client. */
const RAW_INVALID: { rule: string; target: string }[] = [
  { rule: '.. segment alone', target: '..' },
  { rule: '. segment alone', target: '.' },
  { rule: '.. segment inside', target: 'docs/../a.md' },
  { rule: '. segment inside', target: 'docs/./a.md' },
  { rule: '.. escaping the items prefix', target: '../../knowledge' },
  { rule: 'trailing .. segment', target: 'docs/a.md/..' },
  { rule: '%2e%2e segment', target: '%2e%2e' },
  { rule: '%2e%2e segment inside', target: 'docs/%2e%2e/a.md' },
  { rule: '%2E%2E/ segment inside', target: 'docs/%2E%2E/a.md' },
  { rule: '.%2e segment', target: 'docs/.%2e/a.md' },
  { rule: '%2e segment', target: 'docs/%2e/a.md' },
  { rule: '..%2F encoded traversal', target: '..%2Fa.md' },
  { rule: '%2e%2e%2F encoded traversal', target: '%2e%2e%2Fsecret.md' },
];

describe('HTTP paths: the path rules on PUT, GET and DELETE', () => {
  let server: TestServer;
  let commitsBefore: number;

  before(async () => {
    server = await startTestServer();
    // Something real next to the bad paths, so that a wrongly accepted path could reach it.
    expect((await put(server, server.adminKey, 'a.md', { content: 'top' })).status).to.equal(200);
    expect((await put(server, server.adminKey, 'docs/a.md', { content: 'nested' })).status).to.equal(200);
    commitsBefore = await commitCount(server.gitdir());
  });
  after(() => server?.close());

  afterEach(async () => {
    // No invalid path ever changes the repository.
    expect(await commitCount(server.gitdir())).to.equal(commitsBefore);
  });

  for (const { rule, encoded } of INVALID) {
    const url = (): string => `${server.url}${ITEMS}/${encoded}`;
    it(`PUT ${JSON.stringify(encoded.slice(0, 40))} (${rule}) -> 400 Invalid path:`, async () => {
      const res = await api(url(), { method: 'PUT', key: server.adminKey, body: { content: 'x' } });
      expectError(res, 400, /^Invalid path:/);
    });
    it(`GET ${JSON.stringify(encoded.slice(0, 40))} (${rule}) -> 400 Invalid path:`, async () => {
      expectError(await api(url(), { key: server.adminKey }), 400, /^Invalid path:/);
    });
    it(`DELETE ${JSON.stringify(encoded.slice(0, 40))} (${rule}) -> 400 Invalid path:`, async () => {
      expectError(await api(url(), { method: 'DELETE', key: server.adminKey }), 400, /^Invalid path:/);
    });
  }

  it('GET and DELETE on the items prefix without any path -> 400 Invalid path:', async () => {
    expectError(await api(`${server.url}${ITEMS}`, { key: server.adminKey }), 400, /^Invalid path:/);
    expectError(await api(`${server.url}${ITEMS}`, { method: 'DELETE', key: server.adminKey }), 400, /^Invalid path:/);
    const res = await api(`${server.url}${ITEMS}`, { method: 'PUT', key: server.adminKey, body: { content: 'x' } });
    expectError(res, 400, /^Invalid path:/);
  });

  it('the error names the rule', async () => {
    expectError(await get(server, server.adminKey, 'readme'), 400, 'Invalid path: must end with a file extension');
    const deep = await get(server, server.adminKey, 'a/b/c/d/e/f/g.md');
    expect(deep.body?.error).to.match(/^Invalid path: .*\S/);
    expect(deep.body?.error).to.not.equal((await get(server, server.adminKey, 'Readme.md')).body?.error);
  });

  for (const { rule, target } of RAW_INVALID) {
    for (const method of ['PUT', 'GET', 'DELETE']) {
      it(`${method} raw ${JSON.stringify(target)} (${rule}) -> 400 Invalid path:`, async () => {
        const headers: Record<string, string> = { Authorization: `Bearer ${server.adminKey}` };
        const body = method === 'PUT' ? JSON.stringify({ content: 'sneaky' }) : undefined;
        if (body) headers['Content-Type'] = 'application/json';
        const res = await rawRequest(server, { method, path: `${ITEMS}/${target}`, headers, ...(body ? { body } : {}) });
        expect(res.status, res.text).to.equal(400);
        expect(res.body?.success).to.equal(false);
        expect(res.body?.error).to.be.a('string').and.match(/^Invalid path:/);
      });
    }
  }

  it('nothing was created and a.md / docs/a.md are intact after all of that', async () => {
    const items = itemsOf(await list(server, server.adminKey));
    expect(items.map((i) => [i.path, i.content])).to.deep.equal([
      ['a.md', 'top'],
      ['docs/a.md', 'nested'],
    ]);
  });
});

describe('HTTP paths: valid paths and decoding', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  const VALID = [
    `${'a'.repeat(252)}.md`, // exactly 255 characters
    'a/b/c/d/e/f.md', // exactly 5 directory levels
    'my-notes_v2/file.name.tar.gz',
    '0/1/2.json',
    'x.y',
    'docs/trash/x.md', // "trash" without the dot is an ordinary name
  ];
  for (const path of VALID) {
    it(`${JSON.stringify(path.length > 40 ? `${path.slice(0, 20)}…(${path.length})` : path)} is valid: PUT, GET, DELETE`, async () => {
      const created = await put(server, server.adminKey, path, { content: `at ${path}` });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      expectTextItem(itemOf(created), { orgId: 'default', path, content: `at ${path}` });
      const fetched = await get(server, server.adminKey, path);
      expect(fetched.status).to.equal(200);
      expect(itemOf(fetched).path).to.equal(path);
      const deleted = await del(server, server.adminKey, path);
      expect(deleted.status).to.equal(200);
    });
  }

  it('%2F decodes to "/": PUT a%2Fb.md, then GET a/b.md', async () => {
    const created = await api(`${server.url}${ITEMS}/enc%2Fb.md`, { method: 'PUT', key: server.adminKey, body: { content: 'slash' } });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    expect(itemOf(created).path).to.equal('enc/b.md');
    const fetched = await get(server, server.adminKey, 'enc/b.md');
    expect(fetched.status).to.equal(200);
    expect(itemOf(fetched).content).to.equal('slash');
    expect(itemOf(fetched).id).to.equal(itemOf(created).id);
    expect(itemsOf(await list(server, server.adminKey, '?prefix=enc/')).map((i) => i.path)).to.deep.equal(['enc/b.md']);
  });

  it('other percent-encoded allowed characters decode once (%61.md is a.md, %2E in an extension)', async () => {
    const created = await api(`${server.url}${ITEMS}/pct/%61bc%2Emd`, { method: 'PUT', key: server.adminKey, body: { content: 'p' } });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    expect(itemOf(created).path).to.equal('pct/abc.md');
    expect(itemOf(await get(server, server.adminKey, 'pct/abc.md')).content).to.equal('p');
    expect((await api(`${server.url}${ITEMS}/pct%2Fabc.md`, { method: 'DELETE', key: server.adminKey })).status).to.equal(200);
    expectError(await get(server, server.adminKey, 'pct/abc.md'), 404, MSG.notFound);
  });
});
