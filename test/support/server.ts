import { promises as nodeFs } from 'node:fs';
import { loadConfig, type Config } from '../../src/app/config.js';
import { createKey } from '../../src/domain/keys.js';
import { createOrganization } from '../../src/domain/orgs.js';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { silentLogger, type Logger } from '../../src/common/log.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import type { JournalCheck } from '../../src/storage/fs/ext4Journal.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { tmpDir } from './tmp.js';
import { hostGit } from './git.js';

export const fs = nodeFs as unknown as FsPromises;

export interface TestServer {
  url: string;
  dataDir: string;
  /** The admin key of organization "default", printed at first start. */
  adminKey: string;
  /** A new key of `role` in `orgId` (created through the key store, as the CLI does). */
  key(role: 'reader' | 'writer' | 'admin', orgId?: string, name?: string): Promise<string>;
  /** Creates another organization; returns its admin key. */
  org(orgId: string): Promise<string>;
  gitdir(orgId?: string): string;
  close(): Promise<void>;
  server: RunningServer;
}

/**
 * A real server on a real port (port 0) over a fresh temporary data dir, with the default configuration
 * except that failed authentications are not rate limited: the suites send hundreds of deliberate 401s
 * from one address. `config` overrides any setting (test/http/rateLimit.test.ts turns the limits on).
 */
export async function startTestServer(
  options: {
    maxContentBytes?: number;
    dataDir?: string;
    config?: Partial<Config>;
    logger?: Logger;
    /** Stands in for the start's look at the data directory's disk (app/server.ts). */
    noJournal?: JournalCheck;
    /** Stands in for what the server readies once it listens (http/warmUp.ts). */
    warmUp?: () => Promise<void>;
  } = {},
): Promise<TestServer> {
  const tmp = options.dataDir ? undefined : await tmpDir('ks-server');
  const dataDir = options.dataDir ?? (tmp as { dir: string }).dir;
  const config: Config = {
    ...loadConfig({}, { dataDir, port: '0', logLevel: 'error' }),
    rateLimitAuthFailures: 0,
    ...(options.maxContentBytes ? { maxContentBytes: options.maxContentBytes } : {}),
    ...options.config,
  };
  let adminKey = '';
  const server = await startServer({
    config,
    logger: options.logger ?? silentLogger,
    noJournal: options.noJournal,
    warmUp: options.warmUp,
    announce: (line) => {
      adminKey = /ks_\S+/.exec(line)?.[0] ?? '';
    },
  });
  const orgs = new OrgStore({ git: hostGit, fs, dataDir, logger: silentLogger });
  const keys = new KeyStore({ fs, dataDir, logger: silentLogger });
  return {
    url: server.url,
    dataDir,
    adminKey,
    server,
    key: async (role, orgId = 'default', name = `${role}-key`) => (await createKey({ keys, orgId, role, name })).secret,
    org: async (orgId) => (await createOrganization({ orgs, keys, orgId })).secret,
    gitdir: (orgId = 'default') => orgs.gitdirOf(orgId),
    close: async () => {
      await server.close(2000);
      await tmp?.cleanup();
    },
  };
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body; undefined when there is none (304). */
  body: { success: boolean; data?: Record<string, unknown>; error?: string } | undefined;
}

/** One API call with fetch. `body` objects are sent as JSON; strings are sent as they are. */
export async function api(
  url: string,
  options: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const method = options.method ?? 'GET';
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as ApiResponse['body']) : undefined;
  // Held against the API description by the fetch every test uses (support/openapiHooks.ts).
  return { status: res.status, headers: res.headers, body: parsed };
}
