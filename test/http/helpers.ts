import http from 'node:http';
import { expect } from 'chai';
import { createKey, revokeKey } from '../../src/domain/keys.js';
import { silentLogger } from '../../src/common/log.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { checkResponse } from '../support/openapiCheck.js';
import { api, fs, type ApiResponse, type TestServer } from '../support/server.js';

export const LIST = '/api/v1/knowledge';
export const ITEMS = '/api/v1/knowledge/items';

export const MSG = {
  invalidKey: 'Invalid API key',
  notFound: 'Knowledge item not found',
  forbiddenWrite: 'Forbidden — requires knowledge:write permission',
  forbiddenAdmin: 'Forbidden — requires knowledge:admin permission',
  inTrash: 'A deleted item exists at this path — restore it first or use a different path',
  deleted: 'Knowledge item deleted',
  changed: 'Precondition failed: the item has changed',
  tooLarge: 'Content too large',
  routeNotFound: 'Not found',
} as const;

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface Item {
  id: string;
  organizationId: string;
  path: string;
  content?: string;
  itemType: string;
  fileKey: unknown;
  fileName: unknown;
  contentType: unknown;
  fileSize: unknown;
  requiredReadPermission: string;
  requiredWritePermission: string | null;
  createdAt: string;
  updatedAt: string;
}

export const itemUrl = (server: TestServer, path: string): string => `${server.url}${ITEMS}/${path}`;

/** PUT an item as JSON. */
export function put(
  server: TestServer,
  key: string,
  path: string,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
): Promise<ApiResponse> {
  return api(itemUrl(server, path), { method: 'PUT', key, body, ...(headers ? { headers } : {}) });
}

export function get(server: TestServer, key: string, path: string, headers?: Record<string, string>): Promise<ApiResponse> {
  return api(itemUrl(server, path), { key, ...(headers ? { headers } : {}) });
}

export function del(server: TestServer, key: string, path: string): Promise<ApiResponse> {
  return api(itemUrl(server, path), { method: 'DELETE', key });
}

export function list(server: TestServer, key: string, query = ''): Promise<ApiResponse> {
  return api(`${server.url}${LIST}${query}`, { key });
}

/** The item of a successful single-item response. */
export function itemOf(res: ApiResponse): Item {
  expect(res.body?.success, JSON.stringify(res.body)).to.equal(true);
  const item = res.body?.data?.item as Item | undefined;
  expect(item, 'data.item').to.be.an('object');
  return item as Item;
}

export function itemsOf(res: ApiResponse): Item[] {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  const items = res.body?.data?.items as Item[] | undefined;
  expect(items, 'data.items').to.be.an('array');
  return items as Item[];
}

/** Asserts a failure envelope: the status, `success: false`, and the exact message (or a matcher). */
export function expectError(res: ApiResponse, status: number, message?: string | RegExp): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body, 'failure body').to.be.an('object');
  expect(res.body?.success).to.equal(false);
  expect(res.body?.error).to.be.a('string');
  if (typeof message === 'string') expect(res.body?.error).to.equal(message);
  else if (message) expect(res.body?.error).to.match(message);
  expect(res.body).to.not.have.property('data');
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Every KnowledgeItem field (see README, The API), with the values a text item must have. */
export function expectTextItem(item: Item, expected: { orgId: string; path: string; content?: string | undefined }): void {
  expect(item).to.include.all.keys(
    'id',
    'organizationId',
    'path',
    'itemType',
    'fileKey',
    'fileName',
    'contentType',
    'fileSize',
    'requiredReadPermission',
    'requiredWritePermission',
    'createdAt',
    'updatedAt',
  );
  expect(item.id).to.be.a('string').and.match(UUID);
  expect(item.organizationId).to.equal(expected.orgId);
  expect(item.path).to.equal(expected.path);
  if (expected.content !== undefined) expect(item.content).to.equal(expected.content);
  expect(item.itemType).to.equal('text');
  expect(item.fileKey).to.equal(null);
  expect(item.fileName).to.equal(null);
  expect(item.contentType).to.equal(null);
  expect(item.fileSize).to.equal(null);
  expect(item.requiredReadPermission).to.be.a('string');
  expect(item.requiredWritePermission === null || typeof item.requiredWritePermission === 'string').to.equal(true);
  for (const field of ['createdAt', 'updatedAt'] as const) {
    expect(item[field], field).to.be.a('string').and.match(ISO);
    expect(Number.isNaN(Date.parse(item[field])), field).to.equal(false);
  }
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: { success?: unknown; error?: unknown; data?: unknown } | undefined;
}

/**
 * One request with node's http client: the request target goes out exactly as
 * written (fetch and URL would normalize "..", "." and "%2e%2e" away).
 */
export function rawRequest(
  server: TestServer,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawResponse> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: { ...(options.headers ?? {}), Connection: 'close' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: RawResponse['body'];
          try {
            body = text ? (JSON.parse(text) as RawResponse['body']) : undefined;
          } catch {
            body = undefined;
          }
          const method = options.method ?? 'GET';
          // A compressed body is not read here; its status is still held against the description.
          const encoded = Boolean(res.headers['content-encoding']) && res.headers['content-encoding'] !== 'identity';
          checkResponse({
            method,
            url: `${server.url}${options.path}`,
            status: res.statusCode ?? 0,
            contentType: encoded ? '' : String(res.headers['content-type'] ?? ''),
            body,
            text: encoded ? '' : text,
            header: (name) => {
              const value = res.headers[name.toLowerCase()];
              return Array.isArray(value) ? value.join(', ') : value;
            },
          });
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** A key store over the server's data dir, as the CLI builds it. */
export function keyStoreOf(server: TestServer): KeyStore {
  return new KeyStore({ fs, dataDir: server.dataDir, logger: silentLogger });
}

/** Creates a key and returns both its secret and id (so that it can be revoked). */
export async function createKeyWithId(
  server: TestServer,
  role: 'reader' | 'writer' | 'admin',
  orgId = 'default',
): Promise<{ secret: string; id: string; keys: KeyStore }> {
  const keys = keyStoreOf(server);
  const { key, secret } = await createKey({ keys, orgId, role, name: `${role}-revocable` });
  return { secret, id: key.id, keys };
}

export async function revoke(keys: KeyStore, keyId: string): Promise<void> {
  await revokeKey({ keys, keyId });
}
