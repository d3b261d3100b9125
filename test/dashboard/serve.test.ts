import Koa from 'koa';
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DASHBOARD_CSP, dashboardRoutes } from '../../src/http/routes/dashboard.js';
import { rawRequest } from '../http/helpers.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { ensureBuilt } from './support.js';

describe('Dashboard files: served by the server at /dashboard with strict headers', () => {
  let server: TestServer;

  before(async () => {
    await ensureBuilt();
    server = await startTestServer();
  });
  after(() => server?.close());

  const FILES = [
    { path: '/dashboard', type: 'text/html; charset=utf-8' },
    { path: '/dashboard/', type: 'text/html; charset=utf-8' },
    { path: '/dashboard/index.html', type: 'text/html; charset=utf-8' },
    { path: '/dashboard/app.js', type: 'text/javascript; charset=utf-8' },
    { path: '/dashboard/app.css', type: 'text/css; charset=utf-8' },
  ];
  for (const { path, type } of FILES) {
    it(`GET ${path} needs no key: 200 ${type.split(';')[0]}, CSP, nosniff, no framing, no referrer`, async () => {
      const res = await rawRequest(server, { path });
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal(type);
      expect(res.headers['content-security-policy']).to.equal(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
      );
      expect(res.headers['content-security-policy']).to.equal(DASHBOARD_CSP);
      expect(res.headers['x-content-type-options']).to.equal('nosniff');
      expect(res.headers['x-frame-options']).to.equal('DENY');
      expect(res.headers['referrer-policy']).to.equal('no-referrer');
      expect(res.headers['x-request-id']).to.be.a('string');
      expect(res.text.length).to.be.greaterThan(100);
    });
  }

  it('the page loads only its own script and stylesheet: no inline script or style, nothing from elsewhere', async () => {
    const { text } = await rawRequest(server, { path: '/dashboard/' });
    expect(text).to.include('<script type="module" src="/dashboard/app.js"></script>');
    expect(text).to.include('<link rel="stylesheet" href="/dashboard/app.css">');
    expect(text, 'inline script').to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(text, 'inline style').to.not.match(/<style|\sstyle=/i);
    expect(text, 'another origin').to.not.match(/(src|href)="(https?:)?\/\//i);
    const js = (await rawRequest(server, { path: '/dashboard/app.js' })).text;
    expect(js, 'the bundle fetches nothing from another origin').to.not.match(/fetch\(["'`]https?:/);
    expect(js, 'the bundle carries markdown-it').to.include('markdown-it');
  });

  it('/ sends a browser to the dashboard', async () => {
    const res = await rawRequest(server, { path: '/' });
    expect(res.status).to.equal(302);
    expect(res.headers.location).to.equal('/dashboard/');
  });

  it('anything else under /dashboard is a 404, and a write is a 405, as elsewhere', async () => {
    for (const path of ['/dashboard/app.js.map', '/dashboard/../package.json', '/dashboard/%2e%2e/package.json', '/dashboard/static/index.html', '/dashboardx']) {
      const res = await rawRequest(server, { path });
      expect(res.status, path).to.equal(404);
      expect(res.text, path).to.not.include('"name": "knowledge-store"');
    }
    const post = await rawRequest(server, { method: 'POST', path: '/dashboard/', body: '{}', headers: { 'Content-Type': 'application/json' } });
    expect(post.status).to.equal(405);
  });

  it('a missing build is a clear 503 in text, not a crash', async () => {
    const empty = await tmpDir('ks-no-dashboard');
    const app = new Koa();
    app.use(dashboardRoutes({ dashboardDir: empty.dir }).routes());
    const http503 = http.createServer(app.callback());
    await new Promise<void>((resolve) => http503.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = http503.address() as AddressInfo;
      for (const file of ['', 'app.js']) {
        const res = await fetch(`http://127.0.0.1:${port}/dashboard/${file}`);
        expect(res.status).to.equal(503);
        expect(res.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
        expect(await res.text()).to.match(/The dashboard is not built \(.+ is missing\)\. Run `npm run build`/);
      }
    } finally {
      await new Promise((resolve) => http503.close(resolve));
      await empty.cleanup();
    }
  });
});
