import { expect } from 'chai';
import { ExtractionError, ExtractorPool } from '../../src/extract/extractorPool.js';
import { makeDocx, makePdf } from '../support/fileFixtures.js';

const LIMITS = { maxInflatedBytes: 64 * 1024 * 1024, maxPdfPages: 5_000 };

async function refusal(run: Promise<unknown>): Promise<string> {
  try {
    await run;
  } catch (err) {
    expect(err).to.be.instanceOf(ExtractionError);
    return (err as Error).message;
  }
  throw new Error('the extraction was expected to fail');
}

/** The worker pool (src/extract/): limits that hold whatever the file does. */
describe('extract/ExtractorPool', function () {
  this.timeout(60_000);

  it('stops an extraction at its deadline (the worker is terminated)', async () => {
    const pool = new ExtractorPool({ ...LIMITS, timeoutMs: 300, maxHeapMb: 256 });
    const pdf = await makePdf('slow', 3_000);
    expect(await refusal(pool.extract({ bytes: pdf, kind: 'pdf' }))).to.equal('it took longer than 300 ms');
  });

  it('stops an extraction at its heap limit: a DOCX within the size check whose document needs more', async () => {
    const pool = new ExtractorPool({ ...LIMITS, timeoutMs: 30_000, maxHeapMb: 32 });
    // 16 MiB of small paragraphs: well under the unpacked-size check, far over 32 MiB once parsed.
    const docx = makeDocx({ heading: 'x', paragraphs: Array.from({ length: 400_000 }, (_, i) => `p${i}`) });
    expect(await refusal(pool.extract({ bytes: docx, kind: 'docx' }))).to.equal('it needs more than 32 MiB of memory');
  });

  it('never reads what a DOCX image links to (/dev/zero, local files)', async () => {
    const pool = new ExtractorPool({ ...LIMITS, timeoutMs: 20_000, maxHeapMb: 128 });
    const docx = makeDocx({ heading: 'Links', paragraphs: ['kept'], links: ['file:///dev/zero', '/dev/zero', 'file:///etc/passwd'] });
    const { text } = await pool.extract({ bytes: docx, kind: 'docx' });
    expect(text).to.equal('# Links\n\nkept');
  });

  it('runs at most `concurrency` extractions at once; the others wait in order', async () => {
    const pool = new ExtractorPool({ ...LIMITS, timeoutMs: 20_000, maxHeapMb: 64, concurrency: 1 });
    const texts = ['one', 'two', 'three'].map((t) => pool.extract({ bytes: Buffer.from(t), kind: 'text' }));
    expect(pool.queued).to.equal(2);
    expect((await Promise.all(texts)).map((r) => r.text)).to.deep.equal(['one', 'two', 'three']);
    expect(pool.queued).to.equal(0);
  });

  it('names the bytes by their git blob id', async () => {
    const pool = new ExtractorPool({ ...LIMITS, timeoutMs: 20_000, maxHeapMb: 64 });
    // `git hash-object` of "hello\n".
    expect((await pool.extract({ bytes: Buffer.from('hello\n'), kind: 'text' })).blobOid).to.equal('ce013625030ba8dba906f756967f9e9ca394464a');
  });
});
