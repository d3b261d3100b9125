import { expect } from 'chai';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { DOCX_TYPE, makeDocx, makePdf } from '../support/fileFixtures.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { cloneUrl, gitOk } from '../git/support.js';
import { upload } from './fileHelpers.js';
import { LIST, MSG, type Item } from './helpers.js';

import { FILES } from './fileHelpers.js';

/** PUT a body of `bytes` sent in chunks without Content-Length (chunked): only counting can refuse it. */
async function streamed(server: TestServer, key: string, path: string, bytes: number): Promise<ApiResponse> {
  const chunk = Buffer.alloc(64 * 1024, 97);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const res = await fetch(`${server.url}${FILES}/${path}`, { method: 'PUT', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'text/plain' }, body, duplex: 'half' } as RequestInit);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as ApiResponse['body'] };
}

const itemOf = (res: ApiResponse): Item => (res.body?.data as { item: Item }).item;

describe('file items (contract §8): PUT/GET /api/v1/knowledge/files/{path}', function () {
  this.timeout(60_000);
  let server: TestServer;
  let writer: string;
  let reader: string;
  let pdf: Buffer;
  let docx: Buffer;

  before(async () => {
    server = await startTestServer({ config: { maxFileBytes: 2 * 1024 * 1024 }, logger: (await import('../../src/common/log.js')).createLogger({ level: 'error' }) });
    writer = await server.key('writer');
    reader = await server.key('reader');
    pdf = await makePdf('Quarterly zebra report');
    docx = makeDocx({ heading: 'Giraffe handbook', paragraphs: ['Necks are long.', 'Spots vary.'] });
  });
  after(() => server.close());

  it('uploads a PDF, DOCX, HTML page and text file; each is a file item whose content is its text', async () => {
    const cases: Array<[string, Buffer, string, RegExp]> = [
      ['docs/report.pdf', pdf, 'application/pdf', /Quarterly zebra report/],
      ['docs/handbook.docx', docx, DOCX_TYPE, /^# Giraffe handbook\n\nNecks are long\.\n\nSpots vary\.$/],
      ['docs/page.html', Buffer.from('<html><head><script>evil()</script></head><body><h1>Okapi</h1><p>Forest <em>giraffe</em></p></body></html>'), 'text/html; charset=utf-8', /^# Okapi\n\nForest _giraffe_$/],
      ['docs/notes.txt', Buffer.from('plain lemur notes\n'), 'text/plain', /^plain lemur notes\n$/],
      ['docs/data.csv', Buffer.from('a,b\n1,narwhal\n'), 'text/csv', /narwhal/],
    ];
    for (const [path, bytes, type, text] of cases) {
      const res = await upload(server, writer, path, bytes, type);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
      const item = itemOf(res);
      expect(item.itemType).to.equal('file');
      expect(item.content).to.match(text);
      expect(item.fileName).to.equal(path.split('/').pop());
      expect(item.contentType).to.equal(type.split(';')[0]);
      expect(item.fileSize).to.equal(bytes.byteLength);
      expect(item.fileKey).to.match(/^[0-9a-f]{40}$/);
      const got = await api(`${server.url}${LIST}/items/${path}`, { key: reader });
      expect(itemOf(got).content).to.match(text);
      expect(got.headers.get('etag')).to.equal(res.headers.get('etag'));
    }
    const html = await api(`${server.url}${LIST}/items/docs/page.html`, { key: reader });
    expect(itemOf(html).content).to.not.include('evil');
  });

  it('downloads the original bytes byte for byte, with its type, an attachment name and an ETag', async () => {
    const res = await fetch(`${server.url}${FILES}/docs/report.pdf`, { headers: { Authorization: `Bearer ${reader}` } });
    expect(res.status).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(pdf)).to.equal(true);
    expect(res.headers.get('content-type')).to.equal('application/pdf');
    expect(res.headers.get('content-disposition')).to.equal(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    const etag = res.headers.get('etag') as string;
    const again = await fetch(`${server.url}${FILES}/docs/report.pdf`, { headers: { Authorization: `Bearer ${reader}`, 'If-None-Match': etag } });
    expect(again.status).to.equal(304);
  });

  it('finds uploaded files through search by their extracted text', async () => {
    for (const [word, path] of [['zebra', 'docs/report.pdf'], ['giraffe', 'docs/handbook.docx'], ['okapi', 'docs/page.html'], ['lemur', 'docs/notes.txt']]) {
      const res = await api(`${server.url}${LIST}/search?q=${word}`, { key: reader });
      const paths = (res.body?.data as { results: Array<{ path: string; snippet: string }> }).results.map((r) => r.path);
      expect(paths, word).to.include(path);
    }
  });

  it('multipart/form-data with one part "file" works (browsers); X-File-Name sets the name', async () => {
    const form = new FormData();
    form.append('file', new Blob([docx], { type: DOCX_TYPE }), 'Giraffe Handbook (final).docx');
    const res = await fetch(`${server.url}${FILES}/forms/hand.docx`, { method: 'PUT', headers: { Authorization: `Bearer ${writer}` }, body: form });
    const body = (await res.json()) as ApiResponse['body'];
    expect(res.status, JSON.stringify(body)).to.equal(200);
    const item = (body?.data as { item: Item }).item;
    expect(item.fileName).to.equal('Giraffe Handbook (final).docx');
    expect(item.content).to.include('Giraffe handbook');
    const named = await upload(server, writer, 'forms/named.txt', Buffer.from('x'), 'text/plain', { 'X-File-Name': Buffer.from('Résumé.txt', 'utf8').toString('latin1') });
    expect(itemOf(named).fileName).to.equal('Résumé.txt');
    const dl = await fetch(`${server.url}${FILES}/forms/named.txt`, { headers: { Authorization: `Bearer ${reader}` } });
    expect(dl.headers.get('content-disposition')).to.equal(`attachment; filename="R_sum_.txt"; filename*=UTF-8''R%C3%A9sum%C3%A9.txt`);
  });

  it('versions, history and diff follow the extracted text; ?version=n downloads that version; rollback brings its bytes back', async () => {
    const v2 = await makePdf('Quarterly zebra report, revised');
    expect((await upload(server, writer, 'docs/report.pdf', v2, 'application/pdf')).status).to.equal(200);
    const history = await api(`${server.url}${LIST}/history/docs/report.pdf`, { key: reader });
    expect((history.body?.data as { versions: Array<{ action: string }> }).versions.map((v) => v.action)).to.deep.equal(['update', 'create']);
    const diff = await api(`${server.url}${LIST}/diff/docs/report.pdf?from=1&to=2`, { key: reader });
    expect((diff.body?.data as { diff: string }).diff).to.include('+Quarterly zebra report, revised');
    const old = await fetch(`${server.url}${FILES}/docs/report.pdf?version=1`, { headers: { Authorization: `Bearer ${reader}` } });
    expect(Buffer.from(await old.arrayBuffer()).equals(pdf)).to.equal(true);
    const same = await upload(server, writer, 'docs/report.pdf', v2, 'application/pdf');
    expect(same.status).to.equal(200);
    expect((await api(`${server.url}${LIST}/history/docs/report.pdf`, { key: reader }).then((r) => (r.body?.data as { versions: unknown[] }).versions.length))).to.equal(2);
    const stale = await upload(server, writer, 'docs/report.pdf', await makePdf('Lost update'), 'application/pdf', { 'If-Match': '"0000"' });
    expect([stale.status, stale.body?.error]).to.deep.equal([412, 'Precondition failed: the item has changed']);
    const exists = await upload(server, writer, 'docs/report.pdf', pdf, 'application/pdf', { 'If-None-Match': '*' });
    expect(exists.status).to.equal(412);
    // Refused in the write queue, after its bytes went in: a dangling blob, which fsck --strict accepts.
    await fsckStrict(server.gitdir());
    const back = await api(`${server.url}${LIST}/rollback`, { method: 'POST', key: writer, body: { path: 'docs/report.pdf', version: 1 } });
    expect(back.status, JSON.stringify(back.body)).to.equal(200);
    expect(itemOf(back).content).to.equal('Quarterly zebra report');
    const now = await fetch(`${server.url}${FILES}/docs/report.pdf`, { headers: { Authorization: `Bearer ${reader}` } });
    expect(Buffer.from(await now.arrayBuffer()).equals(pdf)).to.equal(true);
  });

  it('rollback of a file item moved since writes where it is now, never at its old path', async () => {
    const admin = server.adminKey;
    expect((await upload(server, writer, 'moved/a.txt', Buffer.from('one\n'), 'text/plain')).status).to.equal(200);
    const id = itemOf(await upload(server, writer, 'moved/a.txt', Buffer.from('two\n'), 'text/plain')).id;
    expect((await api(`${server.url}${LIST}/move`, { method: 'POST', key: writer, body: { from: 'moved/a.txt', to: 'moved/b.txt' } })).status).to.equal(200);
    const back = await api(`${server.url}${LIST}/rollback`, { method: 'POST', key: writer, body: { path: 'moved/b.txt', version: 1 } });
    expect(back.status, JSON.stringify(back.body)).to.equal(200);
    expect([itemOf(back).path, itemOf(back).id, itemOf(back).content]).to.deep.equal(['moved/b.txt', id, 'one\n']);
    expect((await api(`${server.url}${LIST}/items/moved/a.txt`, { key: admin })).status).to.equal(404);
    const bytes = await fetch(`${server.url}${FILES}/moved/b.txt`, { headers: { Authorization: `Bearer ${reader}` } });
    expect(Buffer.from(await bytes.arrayBuffer()).toString()).to.equal('one\n');
  });

  it('a JSON PUT on a file item is 409 "Path holds a file item"; an upload on a text item is 409 "Path holds a text item"', async () => {
    const before = await commitCount(server.gitdir());
    const res = await api(`${server.url}${LIST}/items/docs/notes.txt`, { method: 'PUT', key: writer, body: { content: 'overwrite' } });
    expect(res.status).to.equal(409);
    expect(res.body?.error).to.equal('Path holds a file item');
    const batch = await api(`${server.url}${LIST}/commits`, { method: 'POST', key: writer, body: { operations: [{ op: 'put', path: 'docs/other.md', content: 'x' }, { op: 'put', path: 'docs/notes.txt', content: 'y' }] } });
    expect([batch.status, batch.body?.error, batch.body?.data]).to.deep.equal([409, 'Path holds a file item', { failedOperation: 1 }]);
    await api(`${server.url}${LIST}/items/plain/a.txt`, { method: 'PUT', key: writer, body: { content: 'text item' } });
    const up = await upload(server, writer, 'plain/a.txt', Buffer.from('file'), 'text/plain');
    expect(up.status).to.equal(409);
    expect(up.body?.error).to.equal('Path holds a text item');
    const dl = await api(`${server.url}${FILES}/plain/a.txt`, { key: reader });
    expect(dl.status).to.equal(409);
    expect(await commitCount(server.gitdir())).to.equal(before + 1);
  });

  it('refusals change nothing: 401, 403, 400 path, 413, 415 type, 415 mismatch, extension misfit, 422', async () => {
    const gitdir = server.gitdir();
    const before = await commitCount(gitdir);
    const cases: Array<[string, () => Promise<ApiResponse>, number, string | RegExp]> = [
      ['no key', () => upload(server, 'ks_nope', 'r/a.pdf', pdf, 'application/pdf'), 401, MSG.invalidKey],
      ['reader', () => upload(server, reader, 'r/a.pdf', pdf, 'application/pdf'), 403, MSG.forbiddenWrite],
      ['bad path', () => upload(server, writer, 'R/A.pdf', pdf, 'application/pdf'), 400, /^Invalid path/],
      ['too large', () => upload(server, writer, 'r/big.txt', Buffer.alloc(2 * 1024 * 1024 + 1, 97), 'text/plain'), 413, MSG.tooLarge],
      ['too large, streamed without a length', () => streamed(server, writer, 'r/big.txt', 3 * 1024 * 1024), 413, MSG.tooLarge],
      ['png', () => upload(server, writer, 'r/a.png', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), 'image/png'), 415, 'Unsupported file type: image/png'],
      ['png sent as text', () => upload(server, writer, 'r/a.txt', Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'), Buffer.alloc(64)]), 'text/plain'), 415, 'Unsupported file type: image/png (sent as text/plain)'],
      ['text sent as pdf', () => upload(server, writer, 'r/a.pdf', Buffer.from('not a pdf'), 'application/pdf'), 415, 'Unsupported file type: application/pdf (the bytes are not one)'],
      ['pdf at .txt', () => upload(server, writer, 'r/a.txt', pdf, 'application/pdf'), 400, "The path's extension .txt does not fit application/pdf: use .pdf"],
      ['truncated pdf', () => upload(server, writer, 'r/cut.pdf', pdf.subarray(0, pdf.length >> 1), 'application/pdf'), 422, /^Could not extract text: /],
      ['not utf-8', () => upload(server, writer, 'r/bad.txt', Buffer.from([0x66, 0xff, 0xfe]), 'text/plain'), 422, 'Could not extract text: the file is not valid UTF-8 text'],
      ['gzip body', () => upload(server, writer, 'r/z.txt', Buffer.from('x'), 'text/plain', { 'Content-Encoding': 'gzip' }), 415, 'Unsupported Content-Encoding'],
      ['two parts', () => {
        const form = new FormData();
        form.append('file', new Blob(['a'], { type: 'text/plain' }), 'a.txt');
        form.append('file', new Blob(['b'], { type: 'text/plain' }), 'b.txt');
        return fetch(`${server.url}${FILES}/r/two.txt`, { method: 'PUT', headers: { Authorization: `Bearer ${writer}` }, body: form }).then(async (r) => ({ status: r.status, headers: r.headers, body: (await r.json()) as ApiResponse['body'] }));
      }, 400, 'The multipart body must have exactly one part, named "file"'],
      ['bad name', () => upload(server, writer, 'r/a.txt', Buffer.from('x'), 'text/plain', { 'X-File-Name': 'a/b.txt' }), 400, /^File name must not contain/],
    ];
    for (const [name, send, status, error] of cases) {
      const res = await send();
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).to.equal(status);
      if (error instanceof RegExp) expect(res.body?.error, name).to.match(error);
      else expect(res.body?.error, name).to.equal(error);
    }
    expect(await commitCount(gitdir)).to.equal(before);
    expect((await api(`${server.url}${LIST}?prefix=r/`, { key: writer }).then((r) => (r.body?.data as { items: unknown[] }).items))).to.deep.equal([]);
    await fsckStrict(gitdir);
  });

  it('item permissions hold for files: a folder readable by admins only hides its files from others', async () => {
    const admin = server.adminKey;
    expect((await api(`${server.url}${LIST}/folders/board`, { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:admin' } })).status).to.equal(200);
    expect((await upload(server, admin, 'board/minutes.txt', Buffer.from('secret minutes'), 'text/plain')).status).to.equal(200);
    for (const key of [reader, writer]) {
      const dl = await api(`${server.url}${FILES}/board/minutes.txt`, { key });
      expect([dl.status, dl.body?.error]).to.deep.equal([404, MSG.notFound]);
      const v1 = await api(`${server.url}${FILES}/board/minutes.txt?version=1`, { key });
      expect(v1.status).to.equal(404);
    }
    const overwrite = await upload(server, writer, 'board/minutes.txt', Buffer.from('mine now'), 'text/plain');
    expect(overwrite.status).to.equal(409);
    expect(overwrite.body?.error).to.equal('Path conflict: "board/minutes.txt" is taken');
    const create = await upload(server, writer, 'board/new.txt', Buffer.from('new'), 'text/plain');
    expect([create.status, create.body?.error]).to.deep.equal([403, 'Forbidden — requires knowledge:admin permission']);
    const own = await fetch(`${server.url}${FILES}/board/minutes.txt`, { headers: { Authorization: `Bearer ${admin}` } });
    expect([own.status, await own.text()]).to.deep.equal([200, 'secret minutes']);
  });

  it('a scoped key sees and uploads files only under its folders', async () => {
    const made = await api(`${server.url}${LIST}/keys`, { method: 'POST', key: server.adminKey, body: { name: 'forms-only', role: 'writer', scopes: ['forms/'] } });
    expect(made.status, JSON.stringify(made.body)).to.equal(200);
    const scoped = made.body?.data?.secret as string;
    expect((await upload(server, scoped, 'forms/scoped.txt', Buffer.from('in scope'), 'text/plain')).status).to.equal(200);
    // Outside: the same 403 whatever is there (an item, nothing, a bad type), so nothing outside is told.
    const refusal = (path: string): string => `Forbidden — ${path} is outside this key's scopes (forms/)`;
    const before = await commitCount(server.gitdir());
    for (const [path, bytes, type] of [
      ['docs/scoped.txt', Buffer.from('out of scope'), 'text/plain'],
      ['docs/report.pdf', Buffer.from('over an existing item'), 'text/plain'],
      ['docs/image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), 'image/png'],
    ] as const) {
      const outside = await upload(server, scoped, path, bytes, type);
      expect([outside.status, outside.body?.error], path).to.deep.equal([403, refusal(path)]);
    }
    expect(await commitCount(server.gitdir())).to.equal(before);
    const hidden = await api(`${server.url}${FILES}/docs/report.pdf`, { key: scoped });
    expect([hidden.status, hidden.body?.error]).to.deep.equal([404, MSG.notFound]);
    const seen = await fetch(`${server.url}${FILES}/forms/scoped.txt`, { headers: { Authorization: `Bearer ${scoped}` } });
    expect([seen.status, await seen.text()]).to.deep.equal([200, 'in scope']);
  });

  it('trash, restore and purge move the original and keep the text; a clone shows the real file at its path', async () => {
    const admin = server.adminKey;
    expect((await api(`${server.url}${LIST}/items/docs/handbook.docx`, { method: 'DELETE', key: admin })).status).to.equal(200);
    expect((await api(`${server.url}${FILES}/docs/handbook.docx`, { key: admin })).status).to.equal(404);
    expect((await upload(server, writer, 'docs/handbook.docx', docx, DOCX_TYPE)).body?.error).to.equal(MSG.inTrash);
    const restored = await api(`${server.url}${LIST}/trash/restore`, { method: 'POST', key: admin, body: { path: 'docs/handbook.docx' } });
    expect(restored.status).to.equal(200);
    expect(itemOf(restored).content).to.include('Giraffe handbook');
    const dl = await fetch(`${server.url}${FILES}/docs/handbook.docx`, { headers: { Authorization: `Bearer ${admin}` } });
    expect(Buffer.from(await dl.arrayBuffer()).equals(docx)).to.equal(true);

    await api(`${server.url}${LIST}/items/docs/data.csv`, { method: 'DELETE', key: admin });
    expect((await api(`${server.url}${LIST}/trash/items/docs/data.csv`, { method: 'DELETE', key: admin })).status).to.equal(200);

    const tmp = await tmpDir('ks-files-clone');
    try {
      const dir = join(tmp.dir, 'clone');
      await gitOk(['clone', '--quiet', cloneUrl(server.url, admin), dir]);
      expect((await readFile(join(dir, 'docs/report.pdf'))).equals(pdf)).to.equal(true);
      expect((await readFile(join(dir, 'docs/handbook.docx'))).equals(docx)).to.equal(true);
      expect(await readFile(join(dir, '.knowledge/text/docs/handbook.docx'), 'utf8')).to.include('Giraffe handbook');
      const record = JSON.parse(await readFile(join(dir, '.knowledge/items/docs/report.pdf'), 'utf8')) as Item;
      expect(record.itemType).to.equal('file');
      expect(record.fileKey).to.equal((await git(['rev-parse', 'HEAD:docs/report.pdf'], { cwd: dir })).trim());
      const log = await git(['log', '--format=%s', '--', 'docs/report.pdf'], { cwd: dir });
      expect(log.trim().split('\n')).to.deep.equal(['Roll back docs/report.pdf to version 1', 'Update docs/report.pdf', 'Create docs/report.pdf']);
      const tracked = (await git(['ls-files'], { cwd: dir })).split('\n');
      expect(tracked.filter((f) => f.includes('data.csv')), 'purged: content, text and record gone').to.deep.equal([]);
    } finally {
      await tmp.cleanup();
    }
    await fsckStrict(server.gitdir());
  });
});
