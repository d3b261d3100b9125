import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { expect } from 'chai';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { del, itemsOf, list, LIST, put, rawRequest, type RawResponse } from '../http/helpers.js';

/**
 * Hostile paths (see README, Reliability). fixtures/hostile-paths.json is the corpus: `raw` is the
 * request-target suffix exactly as it goes on the wire after the route prefix. It is sent with
 * node's http client (fetch would resolve dot segments and re-encode), where every character is
 * one byte: %-sequences go out as written, and U+0080..U+00FF become single raw bytes.
 *
 * Every entry breaks the path rules (README, Paths), on every route that takes a path:
 * PUT, GET and DELETE /items/{path}, GET /history/{path}, GET /diff/{path}, DELETE
 * /trash/items/{path}. All of them answer 400 with `Invalid path: <rule>`. None of them is a
 * 404: each route's pattern is `<prefix>{/*path}`, which matches any suffix (the empty one
 * included), and the target is never normalized, so no hostile suffix can fall through to
 * "no such route"; a 404 here would mean a suffix reached a different route or an item lookup.
 * Entries marked `rejectedBy: "http-parser"` hold bytes (raw DEL, raw bytes >= 0x80) that Node's
 * HTTP parser refuses before any route runs: 400 `Bad request`, from the server's clientError
 * handler, also a JSON envelope.
 *
 * Afterwards nothing was written: the commit count, the tree of `main` and every name git has
 * ever recorded are those of the test's own valid set-up, C git's `fsck --strict` is clean, and
 * no file appeared in the data directory.
 */
interface HostilePath {
  raw: string;
  why: string;
  rejectedBy?: 'http-parser';
}

const CORPUS = JSON.parse(readFileSync(new URL('../../fixtures/hostile-paths.json', import.meta.url), 'utf8')) as HostilePath[];

const API = LIST; // /api/v1/knowledge
const ROUTES: { method: string; prefix: string; query?: string; body?: string }[] = [
  { method: 'PUT', prefix: `${API}/items/`, body: JSON.stringify({ content: 'pwned', requiredReadPermission: 'knowledge:read' }) },
  { method: 'GET', prefix: `${API}/items/` },
  { method: 'DELETE', prefix: `${API}/items/` },
  { method: 'GET', prefix: `${API}/history/` },
  // The query is valid, so that the path is the only thing wrong (the diff route checks its query first).
  { method: 'GET', prefix: `${API}/diff/`, query: '?from=1&to=2' },
  { method: 'DELETE', prefix: `${API}/trash/items/` },
];

/** Content files of the set-up below (metadata under .knowledge/ is compared as a whole). */
const SETUP_CONTENT = ['.trash/gone.md', 'a.md', 'docs/a.md', 'etc/passwd.md'];

/** Every file under `dir`, relative, except the key store (its last-used times may be flushed). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => !e.isDirectory())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .filter((p) => !/^keys\.json/.test(p))
    .sort();
}

const treeOf = async (gitdir: string): Promise<string[]> =>
  (await git(['ls-tree', '-r', '-t', '--name-only', 'main'], { gitdir })).split('\n').filter(Boolean).sort();

/** Every path name any object of the repository was ever recorded under. */
const everNamed = async (gitdir: string): Promise<string[]> =>
  [
    ...new Set(
      (await git(['rev-list', '--objects', '--all'], { gitdir }))
        .split('\n')
        .map((line) => line.slice(41))
        .filter(Boolean),
    ),
  ].sort();

describe('Reliability: hostile paths are refused with 400 and write nothing', function () {
  this.timeout(120_000);
  let server: TestServer;
  let gitdir: string;
  const before_ = { commits: 0, tree: [] as string[], named: [] as string[], files: [] as string[] };

  before(async () => {
    server = await startTestServer();
    gitdir = server.gitdir();
    // Real items next to the hostile paths (a wrongly accepted path could reach them), one in the trash.
    for (const path of ['a.md', 'docs/a.md', 'etc/passwd.md', 'gone.md']) {
      expect((await put(server, server.adminKey, path, { content: `valid ${path}` })).status).to.equal(200);
    }
    expect((await del(server, server.adminKey, 'gone.md')).status).to.equal(200);
    before_.commits = await commitCount(gitdir);
    before_.tree = await treeOf(gitdir);
    before_.named = await everNamed(gitdir);
    before_.files = await filesUnder(server.dataDir);
    expect(before_.tree.filter((p) => !/^\.knowledge(\/|$)/.test(p) && !/^(\.trash|docs|etc)$/.test(p))).to.deep.equal(SETUP_CONTENT);
  });
  after(() => server?.close());

  it(`the corpus holds at least 45 distinct entries, each with a reason (${CORPUS.length})`, () => {
    expect(CORPUS.length).to.be.at.least(45);
    expect(new Set(CORPUS.map((c) => c.raw)).size).to.equal(CORPUS.length);
    for (const entry of CORPUS) expect(entry.why, JSON.stringify(entry.raw)).to.be.a('string').and.not.equal('');
  });

  for (const entry of CORPUS) {
    const shown = entry.raw.length > 48 ? `${JSON.stringify(entry.raw.slice(0, 24))}…(${entry.raw.length} chars)` : JSON.stringify(entry.raw);
    it(`${shown} — ${entry.why}: 400 on every route`, async () => {
      for (const route of ROUTES) {
        const headers: Record<string, string> = { Authorization: `Bearer ${server.adminKey}` };
        if (route.body !== undefined) {
          headers['Content-Type'] = 'application/json';
          headers['Content-Length'] = String(Buffer.byteLength(route.body));
        }
        const target = `${route.prefix}${entry.raw}${route.query ?? ''}`;
        const res: RawResponse = await rawRequest(server, {
          method: route.method,
          path: target,
          headers,
          ...(route.body !== undefined ? { body: route.body } : {}),
        });
        const where = `${route.method} ${JSON.stringify(target.slice(0, 120))} -> ${res.status} ${res.text.slice(0, 200)}`;
        expect(res.status, where).to.equal(400);
        expect(res.body, where).to.be.an('object');
        expect(res.body?.success, where).to.equal(false);
        if (entry.rejectedBy === 'http-parser') expect(res.body?.error, where).to.equal('Bad request');
        else expect(res.body?.error, where).to.be.a('string').and.match(/^Invalid path: \S/);
        expect(res.body, where).to.not.have.property('data');
      }
    });
  }

  describe('afterwards, nothing was written', () => {
    it('no commit', async () => {
      expect(await commitCount(gitdir)).to.equal(before_.commits);
    });

    it('`git ls-tree -r main` (C git) holds only what the set-up created', async () => {
      const tree = await treeOf(gitdir);
      expect(tree).to.deep.equal(before_.tree);
      const content = (await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir })).split('\n').filter((p) => p && !p.startsWith('.knowledge/'));
      expect(content.sort()).to.deep.equal(SETUP_CONTENT);
    });

    it('no object of the repository was ever recorded under any other name, and fsck --strict is clean', async () => {
      const named = await everNamed(gitdir);
      expect(named).to.deep.equal(before_.named);
      // And none of those names is hostile: every segment obeys the rules, but for the store's own
      // top-level .knowledge/ and .trash/ folders.
      for (const name of named) {
        const segments = name.replace(/^\.(knowledge|trash)(\/|$)/, '').split('/').filter(Boolean);
        for (const segment of segments) {
          expect(segment, name).to.match(/^[a-z0-9_-][a-z0-9._-]*$/);
          expect(segment, name).to.not.equal('..');
        }
      }
      await fsckStrict(gitdir);
    });

    it('no file appeared in (or under) the data directory', async () => {
      expect(await filesUnder(server.dataDir)).to.deep.equal(before_.files);
    });

    it('the items are exactly the set-up ones, with their content', async () => {
      const items = itemsOf(await list(server, server.adminKey));
      expect(items.map((i) => [i.path, i.content])).to.deep.equal([
        ['a.md', 'valid a.md'],
        ['docs/a.md', 'valid docs/a.md'],
        ['etc/passwd.md', 'valid etc/passwd.md'],
      ]);
      const trash = await rawRequest(server, { path: `${API}/trash`, headers: { Authorization: `Bearer ${server.adminKey}` } });
      expect((trash.body?.data as { items: { path: string }[] }).items.map((i) => i.path)).to.deep.equal(['gone.md']);
    });
  });
});
