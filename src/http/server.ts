import { randomUUID } from 'node:crypto';
import { promises as nodeFs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../config.js';
import { createOrganization } from '../domain/orgs.js';
import type { Logger } from '../log.js';
import { lockDataDir } from '../storage/dataDirLock.js';
import type { FsPromises } from '../storage/fs.js';
import { KeyStore } from '../storage/keyStore.js';
import { OrgStore } from '../storage/orgStore.js';
import { createApp } from './app.js';

export interface RunningServer {
  url: string;
  port: number;
  /** Stops accepting, lets requests in flight finish (at most `graceMs`), flushes, releases the data dir. */
  close(graceMs?: number): Promise<void>;
}

export const DEFAULT_ORG = 'default';

/** How often key last-used times are written out (never once per request). */
const USAGE_FLUSH_MS = 30_000;

export async function startServer(args: {
  config: Config;
  logger: Logger;
  /** Where the first-start admin key line goes (stdout). */
  announce?: (line: string) => void;
  fs?: FsPromises;
}): Promise<RunningServer> {
  const { config, logger, announce = (line) => process.stdout.write(`${line}\n`) } = args;
  const fs = args.fs ?? (nodeFs as unknown as FsPromises);
  const dirLock = await lockDataDir(fs, config.dataDir);
  try {
    const orgs = new OrgStore({ fs, dataDir: config.dataDir, logger, owner: true, autoRepackObjects: config.autoRepackObjects });
    const keys = new KeyStore({ fs, dataDir: config.dataDir, logger });
    if ((await orgs.list()).length === 0) {
      const { secret } = await createOrganization({ orgs, keys, orgId: DEFAULT_ORG });
      announce(`Admin API key for organization "${DEFAULT_ORG}": ${secret}`);
    }
    const app = createApp({ config, orgs, keys, logger });
    const server = http.createServer(
      {
        maxHeaderSize: 16 * 1024,
        headersTimeout: 15_000,
        requestTimeout: 60_000,
        keepAliveTimeout: 5_000,
      },
      app.callback(),
    );
    // Errors Node's HTTP parser answers itself (oversized headers, garbage) still get the JSON envelope.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const reason = status === 431 ? 'Request header fields too large' : status === 408 ? 'Request timeout' : 'Bad request';
      const body = JSON.stringify({ success: false, error: reason });
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const usageTimer = setInterval(() => {
      keys.flushUsage().catch((err: unknown) => logger.warn('could not record key usage', { error: String(err) }));
    }, USAGE_FLUSH_MS);
    usageTimer.unref();
    const { port } = server.address() as AddressInfo;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    logger.info('listening', { url, dataDir: config.dataDir });

    let closing: Promise<void> | undefined;
    const close = (graceMs = 10_000): Promise<void> =>
      (closing ??= (async () => {
        clearInterval(usageTimer);
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        await stopped;
        clearTimeout(timer);
        await orgs.closeAll();
        await keys.flushUsage().catch((err: unknown) => logger.warn('could not record key usage', { error: String(err) }));
        await dirLock.release();
        logger.info('stopped');
      })());
    return { url, port, close };
  } catch (err) {
    await dirLock.release();
    throw err;
  }
}
