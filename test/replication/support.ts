import { expect } from 'chai';
import type { Config } from '../../src/app/config.js';
import { createLogger, type Logger } from '../../src/common/log.js';
import type { MirrorView } from '../../src/domain/replication.js';
import type { ReplicationSettings } from '../../src/storage/replication/remotes.js';
import { api, startTestServer, type TestServer } from '../support/server.js';

/** One mirror as GET /replication answers it. */
export type MirrorJson = MirrorView;

/** Fast retries for tests: 100 ms doubling to 400 ms, pushes killed after `timeoutMs`. */
export function replicating(urls: string[], timeoutMs = 10_000): ReplicationSettings {
  return { remotes: urls.map((url) => ({ org: null, url })), timeoutMs, retryBaseMs: 100, retryMaxMs: 400, concurrency: 4, intervalMs: 0 };
}

/** A server replicating to `settings`, its warnings and errors kept in `logs`. */
export async function replicatingServer(settings: ReplicationSettings, extra: Partial<Config> = {}, dataDir?: string): Promise<{ server: TestServer; logs: string[] }> {
  const logs: string[] = [];
  const logger: Logger = createLogger({ level: 'warn', write: (line) => void logs.push(line) });
  const server = await startTestServer({ logger, dataDir, config: { replication: settings, ...extra } });
  return { server, logs };
}

export async function put(server: TestServer, key: string, path: string, content: string): Promise<void> {
  const res = await api(`${server.url}/api/v1/knowledge/items/${path}`, { method: 'PUT', key, body: { content } });
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
}

export async function mirrors(server: TestServer, key: string): Promise<{ head: string; mirrors: MirrorJson[] }> {
  const res = await api(`${server.url}/api/v1/knowledge/replication`, { key });
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body?.data as unknown as { head: string; mirrors: MirrorJson[] };
}

/** The first mirror once `ready` says yes of it (polled every 50 ms), else undefined. */
export async function firstMirrorWhen(server: TestServer, key: string, ready: (m: MirrorJson, head: string) => boolean): Promise<MirrorJson | undefined> {
  const status = await mirrors(server, key);
  const m = status.mirrors[0];
  return m && ready(m, status.head) ? m : undefined;
}
