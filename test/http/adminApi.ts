import { expect } from 'chai';
import { createKey } from '../../src/domain/keys.js';
import { commitCount, git } from '../support/git.js';
import { api, type ApiResponse, type TestServer } from '../support/server.js';
import { expectError, keyStoreOf, LIST, MSG } from './helpers.js';
import type { VersionView } from '../../src/domain/versionView.js';

/**
 * Shared by the admin and history endpoint tests (history, trash, folders, changes, keys):
 * URL builders, typed readers of the responses, and the bad-body cases every
 * JSON endpoint must refuse without a commit.
 */

export const MSG4 = {
  ...MSG,
  versionNotFound: 'Version not found',
  keyNotFound: 'API key not found',
  purged: 'Knowledge item purged',
} as const;

/** A key that has the right shape but is not stored: 401 everywhere. */
export const UNKNOWN_KEY = `ks_${'B'.repeat(43)}`;

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const COMMIT = /^[0-9a-f]{40}$/;

/** One version as `GET /history/{path}` lists it: the server's own shape. */
export type Version = VersionView;

export const urlOf = (server: TestServer, rest: string): string => `${server.url}${LIST}${rest}`;

export function history(server: TestServer, key: string, path: string): Promise<ApiResponse> {
  return api(urlOf(server, `/history/${path}`), { key });
}

/** The versions of a successful history response (newest first). */
export function versionsOf(res: ApiResponse): Version[] {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  const versions = res.body?.data?.versions as Version[] | undefined;
  expect(versions, 'data.versions').to.be.an('array');
  return versions as Version[];
}

export async function versions(server: TestServer, key: string, path: string): Promise<Version[]> {
  return versionsOf(await history(server, key, path));
}

/** A key of the server's store together with its id (the author's keyId in history). */
export async function keyWithId(
  server: TestServer,
  role: 'reader' | 'writer' | 'admin',
  name: string,
  orgId = 'default',
): Promise<{ secret: string; id: string; name: string }> {
  const { key, secret } = await createKey({ keys: keyStoreOf(server), orgId, role, name });
  return { secret, id: key.id, name };
}

export async function head(server: TestServer, orgId = 'default'): Promise<string> {
  return (await git(['rev-parse', 'main'], { gitdir: server.gitdir(orgId) })).trim();
}

/** Sends a raw body (string) with the given Content-Type. */
export function sendRaw(server: TestServer, key: string, method: string, rest: string, body: string, contentType = 'application/json'): Promise<ApiResponse> {
  return api(urlOf(server, rest), { method, key, body, headers: { 'Content-Type': contentType } });
}

/** Bodies no JSON endpoint accepts, whatever its fields: each must be a 4xx (the status given). */
export const MALFORMED_BODIES: { name: string; body: string; contentType?: string; status: number }[] = [
  { name: 'malformed JSON', body: '{"path": ', status: 400 },
  { name: 'trailing garbage', body: '{}garbage', status: 400 },
  { name: 'a JSON array', body: '[]', status: 400 },
  { name: 'a JSON string', body: '"x"', status: 400 },
  { name: 'JSON null', body: 'null', status: 400 },
  { name: 'text/plain', body: '{}', contentType: 'text/plain', status: 415 },
  { name: 'form-encoded', body: 'path=x', contentType: 'application/x-www-form-urlencoded', status: 415 },
];

/** Asserts that `send` gets the error and that the organization's repository got no commit. */
export async function expectRefusedNoCommit(
  server: TestServer,
  send: () => Promise<ApiResponse>,
  status: number,
  message?: string | RegExp,
  orgId = 'default',
): Promise<ApiResponse> {
  const before = await commitCount(server.gitdir(orgId));
  const res = await send();
  expectError(res, status, message);
  expect(await commitCount(server.gitdir(orgId)), 'commits after a refused request').to.equal(before);
  return res;
}

/** Asserts that `send` succeeds with exactly `commits` new commits; returns the response. */
export async function expectCommits(server: TestServer, commits: number, send: () => Promise<ApiResponse>, orgId = 'default'): Promise<ApiResponse> {
  const before = await commitCount(server.gitdir(orgId));
  const res = await send();
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  expect(await commitCount(server.gitdir(orgId)), 'commits made').to.equal(before + commits);
  return res;
}
