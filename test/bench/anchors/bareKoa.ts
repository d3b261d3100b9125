/**
 * Anchor (a) of the benchmark (README, Performance): the limit of our HTTP stack. A bare Koa app that
 * checks `Authorization: Bearer <key>` the way the store does (SHA-256 of the
 * presented key, compared in constant time; 401 otherwise) and answers every
 * GET with the same ~600-byte JSON item, serialized by Koa as ours is. Nothing
 * else: no router, no storage, no logging.
 *
 * Run as its own process (the bench pins it to the server CPU):
 * `node --import tsx test/bench/anchors/bareKoa.ts <key>`; prints
 * `listening <url>` once it accepts connections, on 127.0.0.1 and a free port.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

const key = process.argv[2];
if (!key) throw new Error('usage: bareKoa.ts <api key>');
const keyHash = createHash('sha256').update(key).digest();

/** The shape of the store's item response, padded to about 600 bytes of JSON. */
export const FIXED_ITEM = {
  success: true,
  data: {
    item: {
      id: '0f8d4a52-6a57-4c3e-9d8e-0b7c1f3e2a19',
      organizationId: 'bench',
      path: 'bench/f000/item-0000.md',
      content:
        '# Item 0\n\nVersion 1 of benchmark item 0.\n\nKnowledge kept as plain files in git: every change a commit, every version still there. Knowledge kept as plain files in git: every change\n',
      itemType: 'text',
      fileKey: null,
      fileName: null,
      contentType: null,
      fileSize: null,
      requiredReadPermission: 'inherit',
      requiredWritePermission: 'inherit',
      createdAt: '2024-01-01T00:00:01.000Z',
      updatedAt: '2024-01-01T00:00:01.000Z',
    },
  },
};

const app = new Koa();
app.use(async (ctx) => {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(ctx.get('Authorization'))?.[1];
  const presented = bearer === undefined ? undefined : createHash('sha256').update(bearer).digest();
  if (!presented || !timingSafeEqual(presented, keyHash)) {
    ctx.status = 401;
    ctx.body = { success: false, error: 'Invalid API key' };
    return;
  }
  ctx.body = FIXED_ITEM;
});

// The store's own HTTP server settings that matter under keep-alive load.
const server = http.createServer({ keepAliveTimeout: 5_000, maxHeaderSize: 16 * 1024 }, app.callback());
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
