import { promises as nodeFs } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { cli, cliServer, closedPort } from './support/cliRun.js';
import { DOCX_TYPE, makeDocx, makePdf } from './support/fileFixtures.js';
import { api } from './support/server.js';
import { tmpDir } from './support/tmp.js';

/**
 * `knowledge-store item upload|download` as child processes against a real server on a real port: file items
 * (README, File items) in through `PUT /files/{path}` with a type the server accepts, out byte for byte.
 */
describe('cli item upload and download (against a running server)', function () {
  this.timeout(60_000);
  const cs = cliServer();
  const { ok, fails } = cs;
  let dir: string;
  let cleanup: () => Promise<void>;
  let pdf: Buffer;

  before(async () => {
    ({ dir, cleanup } = await tmpDir('cli-files-'));
    pdf = await makePdf('Quarterly zebra report');
  });
  after(() => cleanup());

  it('uploads a PDF from --file (its type from the extension, its name from the file), searchable by its text; downloads it byte for byte', async () => {
    // A name with a space and a non-ASCII letter: it travels in a header, as UTF-8.
    const local = join(dir, 'Q3 report ü.pdf');
    await nodeFs.writeFile(local, pdf);
    const line = await ok(['item', 'upload', 'reports/q3.pdf', '--file', local], { key: cs.writerKey });
    expect(line).to.match(/^Uploaded reports\/q3\.pdf \(application\/pdf, \d+ bytes; \d+ characters of text extracted; ETag "[0-9a-f]+"\)\n$/);
    expect(line).to.include(`${pdf.length} bytes`);

    const item = (await api(`${cs.server.url}/api/v1/knowledge/items/reports/q3.pdf`, { key: cs.server.adminKey })).body?.data?.item as Record<string, unknown>;
    expect(item).to.deep.include({ itemType: 'file', fileName: 'Q3 report ü.pdf', contentType: 'application/pdf', fileSize: pdf.length });
    expect(item.content).to.match(/Quarterly zebra report/);
    expect(await ok(['item', 'search', 'zebra'])).to.match(/^reports\/q3\.pdf\t/);

    // To a file, to a folder (under the stored name), to stdout when piped.
    const out = join(dir, 'copy.pdf');
    expect(await ok(['item', 'download', 'reports/q3.pdf', '-o', out])).to.equal(`Wrote ${out} (${pdf.length} bytes, application/pdf)\n`);
    expect((await nodeFs.readFile(out)).equals(pdf)).to.equal(true);
    const folder = join(dir, 'downloads');
    await nodeFs.mkdir(folder);
    await ok(['item', 'download', 'reports/q3.pdf', '--output', folder]);
    expect((await nodeFs.readFile(join(folder, 'Q3 report ü.pdf'))).equals(pdf)).to.equal(true);
    expect(await nodeFs.readdir(folder), 'nothing else left there (no temp file)').to.deep.equal(['Q3 report ü.pdf']);
    const piped = await cli(['item', 'download', 'reports/q3.pdf'], { env: { KNOWLEDGE_URL: cs.server.url, KNOWLEDGE_KEY: cs.writerKey } });
    expect(piped.code, piped.stderr).to.equal(0);
    expect(piped.stdoutBytes.equals(pdf)).to.equal(true);

    const json = JSON.parse(await ok(['item', 'download', 'reports/q3.pdf', '-o', out, '--json'])) as Record<string, unknown>;
    expect(json).to.deep.include({ path: 'reports/q3.pdf', output: out, bytes: pdf.length, contentType: 'application/pdf', fileName: 'Q3 report ü.pdf' });
    expect(json.etag).to.match(/^"[0-9a-f]+"$/);
  });

  it('uploads from stdin (markdown by the path, a DOCX by --type); each upload a version; a version number downloads an old one', async () => {
    await ok(['item', 'upload', 'notes/plan.md'], { input: '# Plan\n\nFirst okapi draft\n' });
    const second = JSON.parse(await ok(['item', 'upload', 'notes/plan.md', '--name', 'plan-v2.md', '--json'], { input: '# Plan\n\nSecond draft\n' })) as Record<string, unknown>;
    expect(second).to.deep.include({ path: 'notes/plan.md', itemType: 'file', contentType: 'text/markdown', fileName: 'plan-v2.md' });
    expect(second).to.have.property('extractedCharacters').that.is.greaterThan(0);
    expect(second).to.not.have.property('content');
    const v1 = await cli(['item', 'download', 'notes/plan.md', '1'], { env: { KNOWLEDGE_URL: cs.server.url, KNOWLEDGE_KEY: cs.server.adminKey } });
    expect(v1.stdout).to.equal('# Plan\n\nFirst okapi draft\n');
    const now = await cli(['item', 'download', 'notes/plan.md'], { env: { KNOWLEDGE_URL: cs.server.url, KNOWLEDGE_KEY: cs.server.adminKey } });
    expect(now.stdout).to.equal('# Plan\n\nSecond draft\n');

    const docx = makeDocx({ heading: 'Handbook', paragraphs: ['The giraffe chapter'] });
    await ok(['item', 'upload', 'docs/handbook.docx', '--type', DOCX_TYPE], { input: docx });
    expect(await ok(['item', 'search', 'giraffe'])).to.match(/^docs\/handbook\.docx\t/);
  });

  it("refusals are the server's, exit 1, nothing changed; a wrong command line is exit 2, sent nowhere", async () => {
    const local = join(dir, 'r.pdf');
    await nodeFs.writeFile(local, pdf);
    // The path says text, the bytes are a PDF.
    await fails(['item', 'upload', 'docs/r.txt', '--file', local], 1, /^knowledge-store: Unsupported file type: application\/pdf \(sent as text\/plain\)\n$/);
    // Declared a PDF, under a path that is not one.
    await fails(['item', 'upload', 'docs/r.txt', '--file', local, '--type', 'application/pdf'], 1, /^knowledge-store: The path's extension \.txt does not fit application\/pdf: use \.pdf\n$/);
    expect((await api(`${cs.server.url}/api/v1/knowledge/items/docs/r.txt`, { key: cs.server.adminKey })).status).to.equal(404);
    const reader = await cs.server.key('reader');
    await fails(['item', 'upload', 'docs/r.pdf', '--file', local], 1, /^knowledge-store: .*permission/i, { env: { KNOWLEDGE_KEY: reader } });
    await ok(['item', 'put', 'docs/text.md'], { input: 'plain text item' });
    await fails(['item', 'upload', 'docs/text.md'], 1, /^knowledge-store: Path holds a text item\n$/, { input: '# not a file' });
    await ok(['item', 'upload', 'docs/r.pdf', '--file', local]);
    await fails(['item', 'upload', 'docs/r.pdf', '--file', local, '--if-match', '"0000"'], 1, /^knowledge-store: Precondition failed/);
    await fails(['item', 'download', 'docs/missing.pdf', '-o', join(dir, 'missing.pdf')], 1, /^knowledge-store: .*not found/i);
    await nodeFs.access(join(dir, 'missing.pdf')).then(
      () => expect.fail('a refused download wrote a file'),
      () => undefined,
    );
    await fails(['item', 'download', 'docs/r.pdf', '--json'], 2, /--json needs --output/);
    await fails(['item', 'download', 'docs/r.pdf', '0', '-o', join(dir, 'x')], 2, /must be a version number/);
    await fails(['item', 'download', 'docs/r.pdf', '9', '-o', join(dir, 'x')], 1, /^knowledge-store: Version not found\n$/);
    await fails(['item', 'upload', 'docs/none.pdf', '--file', join(dir, 'no-such-file.pdf')], 1, /ENOENT|no such file/);
  });
});

describe('cli item download cut off midway', function () {
  this.timeout(60_000);

  it('says so, with how much came (exit 1), and leaves no file and no temp file under the name', async () => {
    // A stand-in server: a thousand bytes of a promised hundred thousand, then the connection drops.
    const cut = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/pdf', 'Content-Length': '100000' });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.destroy(), 100);
    });
    await new Promise<void>((resolve) => cut.listen(0, '127.0.0.1', resolve));
    const { dir, cleanup } = await tmpDir('cli-files-cut-');
    try {
      const url = `http://127.0.0.1:${(cut.address() as AddressInfo).port}`;
      const run = await cli(['item', 'download', 'a.pdf', '-o', join(dir, 'a.pdf'), '--url', url], { env: { KNOWLEDGE_KEY: 'ks_default_x' } });
      expect(run.code).to.equal(1);
      expect(run.stderr).to.equal(`knowledge-store: the download from ${url} was cut off after 1000 bytes (other side closed)\n`);
      expect(await nodeFs.readdir(dir)).to.deep.equal([]);
    } finally {
      await cleanup();
      await new Promise((resolve) => cut.close(resolve));
    }
  });
});

describe('cli item upload of a file larger than the server takes', function () {
  this.timeout(60_000);
  // 1 MiB at most, on this server.
  const cs = cliServer({ maxFileBytes: 1024 * 1024 });
  const { ok, fails } = cs;

  it('is streamed and refused by its Content-Length (413, exit 1), nothing committed; a folder is refused before any request', async () => {
    const { dir, cleanup } = await tmpDir('cli-files-large-');
    try {
      const large = join(dir, 'large.txt');
      await nodeFs.writeFile(large, Buffer.alloc(8 * 1024 * 1024, 'a'));
      await fails(['item', 'upload', 'big/large.txt', '--file', large], 1, /^knowledge-store: Content too large\n$/);
      expect((await api(`${cs.server.url}/api/v1/knowledge/items/big/large.txt`, { key: cs.server.adminKey })).status).to.equal(404);
      // Just under the limit goes in whole.
      const fits = join(dir, 'fits.txt');
      await nodeFs.writeFile(fits, Buffer.alloc(1024 * 1024 - 16, 'b'));
      expect(await ok(['item', 'upload', 'big/fits.txt', '--file', fits])).to.include(`${1024 * 1024 - 16} bytes`);
      const url = `http://127.0.0.1:${await closedPort()}`;
      await fails(['item', 'upload', 'big/dir.txt', '--file', dir, '--url', url], 2, /^knowledge-store: .* is not a file\n$/);
    } finally {
      await cleanup();
    }
  });
});
