import { expect } from 'chai';
import { strToU8 } from 'fflate';
import { commitCount, fsckStrict } from '../support/git.js';
import { DOCX_TYPE, makeDocx, makeEncryptedPdf, makePdf } from '../support/fileFixtures.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { upload } from './fileHelpers.js';
import { LIST } from './helpers.js';

/**
 * A DOCX whose document.xml inflates to `bytes` of blanks while its zip directory says 100 bytes:
 * the size check believes it, so only the worker's heap limit stands in the way.
 */
function lyingBomb(bytes: number): Buffer {
  const xml = new Uint8Array(bytes).fill(0x20);
  xml.set(strToU8(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`), 0);
  const zip = makeDocx({ heading: 'Bomb', paragraphs: [], document: xml });
  // Every uncompressed-size field, in local headers (offset 22) and the central directory (offset 24), says 100.
  for (let at = 0; at + 46 < zip.length; at++) {
    const sig = zip.readUInt32LE(at);
    if (sig === 0x04034b50) zip.writeUInt32LE(100, at + 22);
    if (sig === 0x02014b50) zip.writeUInt32LE(100, at + 24);
  }
  return zip;
}

/**
 * Hostile files (contract §8: "a hostile file cannot stall the server"): each is refused with a
 * clear 4xx or gives sane text, within the extraction limits, and other requests are answered
 * all the while.
 */
describe('file items: hostile files', function () {
  this.timeout(120_000);
  let server: TestServer;
  let writer: string;

  before(async () => {
    server = await startTestServer({ config: { maxFileBytes: 8 * 1024 * 1024, extractMemoryMb: 64, extractTimeoutMs: 20_000 } });
    writer = await server.key('writer');
    await api(`${server.url}${LIST}/items/ok/alive.md`, { method: 'PUT', key: writer, body: { content: 'still here' } });
  });
  after(() => server.close());

  it('bombs, 10,000 pages, truncation, encryption and images pointing at /dev/zero or local files: a clear answer each, nothing committed, GETs answered throughout', async () => {
    const pdf = await makePdf('fine text');
    const before = await commitCount(server.gitdir());
    const cases: Array<{ name: string; path: string; bytes: Buffer; type: string; status: number; error?: RegExp; text?: RegExp }> = [
      {
        name: 'zip bomb that states its size',
        path: 'h/bomb.docx',
        bytes: makeDocx({ heading: 'Bomb', paragraphs: ['x'], padding: 150 * 1024 * 1024 }),
        type: DOCX_TYPE,
        status: 422,
        error: /^Could not extract text: the DOCX unpacks to \d+ bytes; at most \d+ are read$/,
      },
      { name: 'zip bomb that lies about its size', path: 'h/liar.docx', bytes: lyingBomb(120 * 1024 * 1024), type: DOCX_TYPE, status: 422, error: /^Could not extract text: / },
      { name: '10,000 pages', path: 'h/pages.pdf', bytes: await makePdf('page', 10_000), type: 'application/pdf', status: 422, error: /^Could not extract text: the PDF has 10000 pages; at most \d+ are read$/ },
      { name: 'truncated PDF', path: 'h/cut.pdf', bytes: pdf.subarray(0, Math.floor(pdf.length * 0.6)), type: 'application/pdf', status: 422, error: /^Could not extract text: / },
      { name: 'truncated DOCX', path: 'h/cut.docx', bytes: makeDocx({ heading: 'Cut', paragraphs: ['y'] }).subarray(0, 1000), type: DOCX_TYPE, status: 422, error: /^Could not extract text: the file is not a readable DOCX/ },
      { name: 'encrypted PDF', path: 'h/locked.pdf', bytes: await makeEncryptedPdf(), type: 'application/pdf', status: 422, error: /^Could not extract text: the PDF is encrypted$/ },
      {
        name: 'DOCX whose images point at /dev/zero and local files',
        path: 'h/links.docx',
        bytes: makeDocx({ heading: 'Links', paragraphs: ['Body text stays.'], links: ['file:///dev/zero', '/dev/zero', 'file:///etc/passwd', '/etc/passwd', '../../../../etc/hostname'] }),
        type: DOCX_TYPE,
        status: 200,
        text: /^# Links\n\nBody text stays\.\s*$/,
      },
    ];
    let reading = true;
    const latencies: number[] = [];
    const reads = (async () => {
      while (reading) {
        const started = performance.now();
        const res = await api(`${server.url}${LIST}/items/ok/alive.md`, { key: writer });
        latencies.push(performance.now() - started);
        expect(res.status).to.equal(200);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(cases.map(async (c) => ({ c, res: await upload(server, writer, c.path, c.bytes, c.type) })));
    reading = false;
    await reads;
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(`      ${cases.length} hostile uploads answered in ${Math.round(performance.now() - started)} ms; ${latencies.length} GETs meanwhile, slowest ${Math.round(sorted[sorted.length - 1] ?? 0)} ms`);
    for (const { c, res } of answers as Array<{ c: (typeof cases)[number]; res: ApiResponse }>) {
      expect(res.status, `${c.name}: ${JSON.stringify(res.body)}`).to.equal(c.status);
      if (c.error) expect(res.body?.error, c.name).to.match(c.error);
      if (c.text) expect((res.body?.data as { item: { content: string } }).item.content, c.name).to.match(c.text);
    }
    expect(latencies.length, 'GETs were answered while the files were extracted').to.be.greaterThan(5);
    expect(await commitCount(server.gitdir())).to.equal(before + 1);
    await fsckStrict(server.gitdir());
  });
});
