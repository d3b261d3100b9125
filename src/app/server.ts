import { randomUUID } from 'node:crypto';
import { promises as nodeFs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from './config.js';
import { watchDirectory } from './fileWatch.js';
import { createOrganization } from '../domain/orgs.js';
import type { Logger } from '../common/log.js';
import { lockDataDir } from '../storage/fs/dataDirLock.js';
import type { FsPromises } from '../storage/fs/fs.js';
import { KeyStore } from '../storage/keys/keyStore.js';
import { OrgStore } from '../storage/repo/orgStore.js';
import { createApp } from '../http/app.js';

export interface RunningServer {
  url: string;
  port: number;
  /** Stops accepting, lets requests in flight finish (at most `graceMs`), flushes, releases the data dir. */
  close(graceMs?: number): Promise<void>;
}

export const DEFAULT_ORG = 'default';

/** What every response carries (contract §3, issue 7), also those Node's HTTP layer answers before Koa. */
const STANDARD_HEADERS = (): Record<string, string> => ({
  'X-Request-Id': randomUUID(),
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
});

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
    const keys = new KeyStore({ fs, dataDir: config.dataDir, logger, watch: watchDirectory });
    await keys.startWatching();
    if ((await orgs.list()).length === 0) {
      const { secret } = await createOrganization({ orgs, keys, orgId: DEFAULT_ORG });
      announce(`Admin API key for organization "${DEFAULT_ORG}": ${secret}`);
    }
    const app = createApp({ config, orgs, keys, logger });
    const server = http.createServer(
      {
        maxHeaderSize: 16 * 1024,
        // A client has 15 s to send its headers and 60 s for the whole request (slowloris, issue 7);
        // the timeouts are checked every second rather than Node's default 30 s, so slow clients go promptly.
        headersTimeout: 15_000,
        requestTimeout: 60_000,
        connectionsCheckingInterval: 1_000,
        keepAliveTimeout: 5_000,
        // Node would answer a request without Host with a bare 400 of its own; the app answers everything.
        requireHostHeader: false,
      },
      app.callback(),
    );
    // Node answers an Expect other than 100-continue itself (bare 417) unless asked: give it the envelope.
    server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const body = JSON.stringify({ success: false, error: 'Expectation failed' });
      res.writeHead(417, { ...STANDARD_HEADERS(), 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
    // Errors Node's HTTP parser answers itself (oversized headers, garbage) still get the JSON envelope.
    server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
      // A response already under way on this socket cannot be replaced; Node's own handler gives up too.
      if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const reason = status === 431 ? 'Request header fields too large' : status === 408 ? 'Request timeout' : 'Bad request';
      // An answer to HEAD has no body, even when the request could not be parsed past its method.
      const head = err.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
      const body = head ? '' : JSON.stringify({ success: false, error: reason });
      const headers = { ...STANDARD_HEADERS(), 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' };
      const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.end(`HTTP/1.1 ${status} ${reason}\r\n${lines}\r\n${body}`);
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
        keys.stopWatch();
        await dirLock.release();
        logger.info('stopped');
      })());
    return { url, port, close };
  } catch (err) {
    await dirLock.release();
    throw err;
  }
}
