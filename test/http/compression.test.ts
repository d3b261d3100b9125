import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import Koa from 'koa';
import { COMPRESS_THRESHOLD_BYTES, compression } from '../../src/http/middleware/compression.js';
import type { AppState } from '../../src/http/state.js';

/**
 * The compression middleware serializes a JSON answer once: koa-compress weighs an object by `ctx.response.length`,
 * which is a whole `JSON.stringify` thrown away before Koa serializes it again (a search page paid it on every
 * answer). A body whose `toJSON` counts its calls says how many times it was serialized.
 */
describe('http/compression: a JSON answer is serialized once', () => {
  let server: http.Server;
  let url: string;
  let calls = 0;
  let size = 0;
  before(async () => {
    const app = new Koa<AppState>();
    app.use(compression());
    app.use((ctx) => {
      ctx.body = {
        toJSON: () => {
          calls++;
          return { success: true, data: 'x'.repeat(size) };
        },
      };
    });
    server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const get = (headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        })
        .on('error', reject);
    });

  it('under the threshold: once, sent as JSON with its length', async () => {
    size = 6_000;
    calls = 0;
    const res = await get({ 'Accept-Encoding': 'gzip' });
    expect(calls).to.equal(1);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.headers['content-encoding']).to.equal(undefined);
    expect(Number(res.headers['content-length'])).to.equal(res.body.length);
    expect(JSON.parse(res.body.toString('utf8'))).to.deep.equal({ success: true, data: 'x'.repeat(size) });
  });

  it('over the threshold: once, and compressed', async () => {
    size = COMPRESS_THRESHOLD_BYTES * 2;
    calls = 0;
    const res = await get({ 'Accept-Encoding': 'gzip' });
    expect(calls).to.equal(1);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.headers['content-encoding']).to.equal('gzip');
    expect(JSON.parse(gunzipSync(res.body).toString('utf8'))).to.deep.equal({ success: true, data: 'x'.repeat(size) });
  });
});
