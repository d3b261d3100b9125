import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { cli, cliServer, closedPort } from './support/cliRun.js';
import { api, startTestServer } from './support/server.js';
import { tmpDir } from './support/tmp.js';

/**
 * `knowledge-store item ls|get|put|rm|search` and `org list` as child processes against a real server on a real
 * port: the server and key come from KNOWLEDGE_URL / KNOWLEDGE_KEY (or --url / --key). The structural and
 * version commands, the trash's and `item watch` are in cliChanges.test.ts.
 */

describe('cli item commands (against a running server)', function () {
  this.timeout(60_000);
  const cs = cliServer();
  const { ok, fails } = cs;

  it('put from stdin with --message, then get prints the content exactly as stored', async () => {
    const content = '# Guide\n\nFirst words, no trailing newline: ünïcode';
    const out = await ok(['item', 'put', 'docs/guide.md', '--message', 'First draft'], { input: content });
    expect(out).to.match(/^Saved docs\/guide\.md \(ETag "?[^)]+"?\)\n$/);
    expect(await ok(['item', 'get', 'docs/guide.md'])).to.equal(content);
    const stored = await api(`${cs.server.url}/api/v1/knowledge/items/docs/guide.md`, { key: cs.server.adminKey });
    expect((stored.body?.data?.item as { content: string }).content).to.equal(content);
  });

  it('put --file; get --json is the item with its ETag; --if-match guards the update', async () => {
    const dir = await tmpDir('ks-cli-items');
    try {
      const file = join(dir.dir, 'notes.md');
      await nodeFs.writeFile(file, 'v1\n');
      const put = JSON.parse(await ok(['item', 'put', 'notes/a.md', '--file', file, '--json'], { key: cs.writerKey })) as Record<string, unknown>;
      expect(put.path).to.equal('notes/a.md');
      expect(put).not.to.have.property('content');
      const got = JSON.parse(await ok(['item', 'get', 'notes/a.md', '--json'])) as { content: string; etag: string; path: string; id: string };
      expect(got).to.include({ content: 'v1\n', path: 'notes/a.md', etag: put.etag, id: put.id });

      await nodeFs.writeFile(file, 'v2\n');
      const stale = await fails(['item', 'put', 'notes/a.md', '--file', file, '--if-match', '"not-the-etag"'], 1, /Precondition failed: the item has changed/);
      expect(stale.stderr).to.equal('knowledge-store: Precondition failed: the item has changed\n');
      expect(await ok(['item', 'get', 'notes/a.md'])).to.equal('v1\n');
      await ok(['item', 'put', 'notes/a.md', '--file', file, '--if-match', got.etag, '-m', 'Second']);
      expect(await ok(['item', 'get', 'notes/a.md'])).to.equal('v2\n');
    } finally {
      await dir.cleanup();
    }
  });

  it('history lists the versions newest first, with their messages', async () => {
    await ok(['item', 'put', 'docs/history.md', '-m', 'one'], { input: 'a' });
    await ok(['item', 'put', 'docs/history.md', '-m', 'two'], { input: 'b' });
    const rows = (await ok(['item', 'history', 'docs/history.md'])).trimEnd().split('\n').map((l) => l.split('\t'));
    expect(rows.map((r) => [r[0], r[2], r[5]])).to.deep.equal([
      ['2', 'update', 'two'],
      ['1', 'create', 'one'],
    ]);
    const versions = JSON.parse(await ok(['item', 'history', 'docs/history.md', '--json'])) as Array<{ version: number; message: string }>;
    expect(versions.map((v) => v.version)).to.deep.equal([2, 1]);
    // Each version's content, as history numbers them; past the last, the server's 404.
    expect(await ok(['item', 'get', 'docs/history.md', '1'])).to.equal('a');
    expect(await ok(['item', 'get', 'docs/history.md', '2'])).to.equal('b');
    expect(JSON.parse(await ok(['item', 'get', 'docs/history.md', '1', '--json']))).to.include({ content: 'a', path: 'docs/history.md' });
    await fails(['item', 'get', 'docs/history.md', '3'], 1, /^knowledge-store: Version not found\n$/);
    await fails(['item', 'get', 'docs/history.md', 'first'], 2, /must be a version number/);
  });

  it('ls pages through every item, sorted by path; --prefix keeps to a folder', async () => {
    for (const n of [1, 2, 3, 4, 5]) await api(`${cs.server.url}/api/v1/knowledge/items/many/i${n}.md`, { method: 'PUT', key: cs.server.adminKey, body: { content: `item ${n}` } });
    const all = (await ok(['item', 'ls', '--page-size', '2'])).trimEnd().split('\n').map((l) => l.split('\t')[0]);
    const listed = await api(`${cs.server.url}/api/v1/knowledge?content=false`, { key: cs.server.adminKey });
    expect(all).to.deep.equal((listed.body?.data?.items as Array<{ path: string }>).map((i) => i.path));
    expect(all.filter((p) => p?.startsWith('many/'))).to.have.length(5);
    const many = JSON.parse(await ok(['item', 'ls', '--prefix', 'many/', '--page-size', '2', '--json'])) as Array<{ path: string; content?: string }>;
    expect(many.map((i) => i.path)).to.deep.equal(['many/i1.md', 'many/i2.md', 'many/i3.md', 'many/i4.md', 'many/i5.md']);
    expect(many[0]).not.to.have.property('content');
  });

  it('search finds items the key may read, with --prefix and --limit', async () => {
    await ok(['item', 'put', 'recipes/soup.md'], { input: 'tomato soup with potato' });
    await ok(['item', 'put', 'recipes/salad.md'], { input: 'potato salad' });
    await ok(['item', 'put', 'board/budget.md'], { input: 'potato budget' });
    const paths = (await ok(['item', 'search', 'potato'])).trimEnd().split('\n').map((l) => l.split('\t')[0]);
    expect([...paths].sort()).to.deep.equal(['board/budget.md', 'recipes/salad.md', 'recipes/soup.md']);
    const inRecipes = JSON.parse(await ok(['item', 'search', 'potato', '--prefix', 'recipes/', '--json'])) as Array<{ path: string; snippet: string }>;
    expect(inRecipes.map((r) => r.path).sort()).to.deep.equal(['recipes/salad.md', 'recipes/soup.md']);
    expect((await ok(['item', 'search', 'potato', '--limit', '1'])).trimEnd().split('\n')).to.have.length(1);
    expect(await ok(['item', 'search', 'nothingmatchesthis'])).to.equal('No items match.\n');
  });

  it('rm moves an item to the trash (admin); a writer gets the server\'s 403 message', async () => {
    await ok(['item', 'put', 'tmp/gone.md'], { input: 'bye' });
    await fails(['item', 'rm', 'tmp/gone.md'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    expect(await ok(['item', 'rm', 'tmp/gone.md'])).to.equal('Deleted tmp/gone.md (in the trash until purged)\n');
    await fails(['item', 'get', 'tmp/gone.md'], 1, /Knowledge item not found/);
  });

  it('--url and --key override the environment', async () => {
    const out = await cli(['item', 'get', 'docs/guide.md', '--url', cs.server.url, '--key', cs.server.adminKey]);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.match(/^# Guide/);
  });

  it('API errors: the server\'s message and exit 1; with --json, {error, code, status}', async () => {
    await fails(['item', 'get', 'docs/guide.md'], 1, /^knowledge-store: Invalid API key\n$/, { env: { KNOWLEDGE_KEY: 'ks_wrong' } });
    await fails(['item', 'get', 'Bad.md'], 1, /Invalid path/);
    const run = await fails(['item', 'get', 'docs/missing.md', '--json'], 1, /./);
    expect(JSON.parse(run.stderr)).to.deep.equal({ error: 'Knowledge item not found', code: 'API_ERROR', status: 404 });
  });

  it('a refused connection says which URL it tried (exit 1)', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    await fails(['item', 'ls'], 1, new RegExp(`cannot reach ${url.replace(/\./g, '\\.')}: connection refused`), { env: { KNOWLEDGE_URL: url } });
    const run = await fails(['item', 'ls', '--json'], 1, /./, { env: { KNOWLEDGE_URL: url } });
    expect(JSON.parse(run.stderr)).to.include({ code: 'CONNECTION_FAILED' });
  });

  it('usage errors exit 2: no key, a bad URL, a bad --limit, a missing path', async () => {
    await fails(['item', 'ls'], 2, /no API key: set KNOWLEDGE_KEY/, { env: { KNOWLEDGE_KEY: undefined } });
    await fails(['item', 'ls', '--url', 'not a url'], 2, /not a URL/);
    await fails(['item', 'search', 'x', '--limit', '0'], 2, /--limit/);
    await fails(['item', 'get'], 2, /missing required argument 'path'/);
    const run = await fails(['item', 'search', 'x', '--limit', 'many', '--json'], 2, /./);
    expect(JSON.parse(run.stderr)).to.include({ code: 'USAGE_ERROR' });
  });

  it('a path with a . or .. segment (an item, a folder, a hook id) is refused (exit 2) rather than resolved by the URL to another one', async () => {
    await ok(['item', 'put', 'keep.md'], { input: 'keep me' });
    for (const args of [['item', 'rm', 'docs/../keep.md'], ['item', 'get', './keep.md'], ['item', 'history', 'a/./keep.md'], ['folder', 'get', '../docs/'], ['webhook', 'rm', '..']]) {
      await fails(args, 2, /^knowledge-store: not a path the API takes: ".*" \(no segment may be \. or \.\.\)\n$/);
    }
    expect(await ok(['item', 'get', 'keep.md'])).to.equal('keep me');
  });

  it('content that is not UTF-8 is refused before anything is sent (never stored with U+FFFD); a BOM is kept', async () => {
    const binary = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x2d, 0xe2, 0xe3, 0xcf, 0xd3, 0x0a]);
    await fails(['item', 'put', 'bin/a.md'], 2, /^knowledge-store: stdin is not UTF-8 text: a PDF, DOCX or other document goes in with `item upload`\n$/, { input: binary });
    const dir = await tmpDir('cli-utf8-');
    try {
      const file = join(dir.dir, 'scan.md');
      await nodeFs.writeFile(file, binary);
      await fails(['item', 'put', 'bin/a.md', '--file', file], 2, new RegExp(`^knowledge-store: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not UTF-8 text`));
      await fails(['item', 'commit', '--file', file], 2, /is not UTF-8 text\n$/);
    } finally {
      await dir.cleanup();
    }
    expect((await api(`${cs.server.url}/api/v1/knowledge/items/bin/a.md`, { key: cs.server.adminKey })).status, 'nothing was stored').to.equal(404);
    await ok(['item', 'put', 'bin/bom.md'], { input: Buffer.from('\ufeff# Title\n', 'utf8') });
    expect(await ok(['item', 'get', 'bin/bom.md'])).to.equal('\ufeff# Title\n');
  });
});

describe('cli org list', function () {
  this.timeout(60_000);

  it('lists every organization with its live and trashed item counts, beside a running server; --json', async () => {
    const server = await startTestServer();
    try {
      const env = { KNOWLEDGE_DATA_DIR: server.dataDir };
      const empty = await cli(['org', 'list'], { env });
      expect(empty.code, empty.stderr).to.equal(0);
      expect(empty.stdout).to.equal('ID\tITEMS\tIN TRASH\ndefault\t0\t0\n');

      await server.org('acme');
      for (const path of ['a.md', 'docs/b.md', 'docs/c.md']) {
        await api(`${server.url}/api/v1/knowledge/items/${path}`, { method: 'PUT', key: server.adminKey, body: { content: path } });
      }
      await api(`${server.url}/api/v1/knowledge/items/docs/c.md`, { method: 'DELETE', key: server.adminKey });
      const text = await cli(['org', 'list', '--data-dir', server.dataDir]);
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.equal('ID\tITEMS\tIN TRASH\nacme\t0\t0\ndefault\t2\t1\n');
      const json = await cli(['org', 'list', '--json'], { env });
      expect(JSON.parse(json.stdout)).to.deep.equal([
        { orgId: 'acme', items: 0, trashed: 0 },
        { orgId: 'default', items: 2, trashed: 1 },
      ]);
    } finally {
      await server.close();
    }
  });

  it('an empty data directory has no organizations', async () => {
    const dir = await tmpDir('ks-cli-orgs');
    try {
      const run = await cli(['org', 'list', '--data-dir', join(dir.dir, 'data')]);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.equal('No organizations.\n');
      expect(JSON.parse((await cli(['org', 'list', '--json', '--data-dir', join(dir.dir, 'data')])).stdout)).to.deep.equal([]);
    } finally {
      await dir.cleanup();
    }
  });
});
