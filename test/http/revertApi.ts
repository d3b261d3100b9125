import { expect } from 'chai';
import { fsckStrict, git } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { head, keyWithId, urlOf } from './adminApi.js';
import { expectError, get, itemOf } from './helpers.js';

/** Shared by the POST /revert tests: the call, its answer's shape, and a refusal that must change nothing. */

export interface Conflict {
  path: string;
  why: string;
  current: { version: number; etag: string } | null;
}
export interface Reverted {
  commitId: string | null;
  reverted: string[];
  conflicts: Conflict[];
}

export function revert(server: TestServer, key: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, '/revert'), { method: 'POST', key, body });
}

export async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  expect(r.body?.success).to.equal(true);
  return r;
}

export async function reverted(server: TestServer, key: string, body: unknown): Promise<Reverted> {
  return (await ok(revert(server, key, body))).body?.data as unknown as Reverted;
}

/** The commit id of a write: main after it (each write here is one commit). */
export async function wrote(server: TestServer, send: Promise<ApiResponse>): Promise<string> {
  await ok(send);
  return head(server);
}

export async function content(server: TestServer, key: string, path: string): Promise<string | undefined> {
  const r = await get(server, key, path);
  return r.status === 404 ? undefined : itemOf(r).content;
}

/** The refusal's status and message, and main exactly where it was. */
export async function refused(server: TestServer, key: string, body: unknown, status: number, message: string | RegExp): Promise<void> {
  const before = await head(server);
  expectError(await revert(server, key, body), status, message);
  expect(await head(server), 'main after a refused revert').to.equal(before);
}

export async function lastMessage(server: TestServer): Promise<string> {
  return git(['log', '-1', '--format=%B', 'main'], { gitdir: server.gitdir() });
}


/** A server with a second admin key ("Olga Other", whose later changes are the conflicts). */
export async function startRevertServer(): Promise<{ server: TestServer; admin: string; other: { secret: string; id: string; name: string } }> {
  const server = await startTestServer();
  return { server, admin: server.adminKey, other: await keyWithId(server, 'admin', 'Olga Other') };
}

/** Closes the server once git fsck --strict found its repository clean. */
export async function closeChecked(server: TestServer | undefined): Promise<void> {
  if (!server) return;
  try {
    await fsckStrict(server.gitdir());
  } finally {
    await server.close();
  }
}
