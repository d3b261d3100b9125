import { expect } from 'chai';
import { commitCount, fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { expectError, get, itemOf, itemsOf, itemUrl, list, MSG, put, rawRequest } from './helpers.js';

const LIMIT = 1000;

describe('HTTP bad input changes nothing', () => {
  let server: TestServer;
  let commitsBefore: number;

  before(async () => {
    server = await startTestServer({ maxContentBytes: LIMIT });
    const res = await put(server, server.adminKey, 'bad/existing.md', { content: 'original' });
    expect(res.status).to.equal(200);
  });
  after(() => server?.close());

  beforeEach(async () => {
    commitsBefore = await commitCount(server.gitdir());
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'passed') return;
    expect(await commitCount(server.gitdir()), 'commits after bad input').to.equal(commitsBefore);
    const items = itemsOf(await list(server, server.adminKey));
    expect(items.map((i) => [i.path, i.content])).to.deep.equal([['bad/existing.md', 'original']]);
  });

  /** Sends the same bad PUT to a new path and to the existing item. */
  async function bothPaths(send: (path: string) => Promise<ApiResponse>, check: (res: ApiResponse) => void): Promise<void> {
    for (const path of ['bad/new.md', 'bad/existing.md']) check(await send(path));
  }
  const putRaw = (path: string, body: string, contentType = 'application/json'): Promise<ApiResponse> =>
    api(itemUrl(server, path), { method: 'PUT', key: server.adminKey, body, headers: { 'Content-Type': contentType } });

  describe('malformed JSON -> 400', () => {
    for (const body of ['{not json', '{"content": "x"', '{"content": "x",}', "{'content': 'x'}", '{"content": "x"}garbage', '"just a string"', 'null', '42', 'true']) {
      it(`body ${JSON.stringify(body)}`, async () => {
        await bothPaths(
          (p) => putRaw(p, body),
          (res) => expectError(res, 400),
        );
      });
    }
  });

  describe('a JSON body that is not an object -> 400', () => {
    for (const body of ['[]', '[{"content":"x"}]']) {
      it(`body ${body}`, async () => {
        await bothPaths(
          (p) => putRaw(p, body),
          (res) => expectError(res, 400),
        );
      });
    }
  });

  describe('not JSON -> 415', () => {
    for (const contentType of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
      it(`Content-Type ${contentType}`, async () => {
        await bothPaths(
          (p) => putRaw(p, JSON.stringify({ content: 'sneaky' }), contentType),
          (res) => expectError(res, 415),
        );
      });
    }

    it('no Content-Type at all', async () => {
      for (const path of ['bad/new.md', 'bad/existing.md']) {
        const res = await rawRequest(server, {
          method: 'PUT',
          path: `/api/v1/knowledge/items/${path}`,
          headers: { Authorization: `Bearer ${server.adminKey}` },
          body: JSON.stringify({ content: 'sneaky' }),
        });
        expect(res.status, res.text).to.equal(415);
        expect(res.body?.success).to.equal(false);
        expect(res.body?.error).to.be.a('string');
      }
    });
  });

  describe('content missing or not a string -> 400', () => {
    const bodies: Record<string, unknown>[] = [
      {},
      { message: 'no content' },
      { content: 5 },
      { content: null },
      { content: true },
      { content: ['x'] },
      { content: { text: 'x' } },
    ];
    for (const body of bodies) {
      it(`body ${JSON.stringify(body)}`, async () => {
        await bothPaths(
          (p) => put(server, server.adminKey, p, body),
          (res) => expectError(res, 400),
        );
      });
    }

    it('an empty body with Content-Type application/json', async () => {
      await bothPaths(
        (p) => putRaw(p, ''),
        (res) => expectError(res, 400),
      );
    });
  });

  describe('unknown field -> 400', () => {
    for (const field of ['id', 'path', 'itemType', 'fileKey', 'organizationId', 'createdAt', 'contents', 'Content']) {
      it(`field ${field}`, async () => {
        await bothPaths(
          (p) => put(server, server.adminKey, p, { content: 'x', [field]: 'y' }),
          (res) => expectError(res, 400),
        );
      });
    }
  });

  describe('bad message -> 400', () => {
    it('message of 1001 characters', async () => {
      await bothPaths(
        (p) => put(server, server.adminKey, p, { content: 'changed', message: 'm'.repeat(1001) }),
        (res) => expectError(res, 400),
      );
    });

    it('message not a string', async () => {
      await bothPaths(
        (p) => put(server, server.adminKey, p, { content: 'changed', message: 42 }),
        (res) => expectError(res, 400),
      );
    });
  });

  describe('bad permission value -> 400', () => {
    for (const fields of [{ requiredReadPermission: 'everyone' }, { requiredWritePermission: 'knowledge:superuser' }, { requiredReadPermission: ['knowledge:read'] }]) {
      it(JSON.stringify(fields), async () => {
        await bothPaths(
          (p) => put(server, server.adminKey, p, { content: 'changed', ...fields }),
          (res) => expectError(res, 400),
        );
      });
    }
  });

  it('content that is not valid Unicode (a lone surrogate) -> 4xx', async () => {
    await bothPaths(
      (p) => putRaw(p, '{"content":"broken \\ud800 text"}'),
      (res) => {
        expect(res.status).to.be.within(400, 499);
        expect(res.body?.success).to.equal(false);
      },
    );
  });

  it('an unknown query parameter on PUT -> 400', async () => {
    await bothPaths(
      (p) => api(`${itemUrl(server, p)}?force=true`, { method: 'PUT', key: server.adminKey, body: { content: 'changed' } }),
      (res) => expectError(res, 400),
    );
  });

  describe('content limit (maxContentBytes = 1000)', () => {
    it(`content of ${LIMIT + 1} bytes -> 413 Content too large`, async () => {
      await bothPaths(
        (p) => put(server, server.adminKey, p, { content: 'a'.repeat(LIMIT + 1) }),
        (res) => expectError(res, 413, MSG.tooLarge),
      );
    });

    it('the limit counts UTF-8 bytes, not characters: 501 × "é" (1002 bytes) -> 413', async () => {
      await bothPaths(
        (p) => put(server, server.adminKey, p, { content: 'é'.repeat(501) }),
        (res) => expectError(res, 413, MSG.tooLarge),
      );
    });

    it('... and 4-byte characters: 251 × "😀" (1004 bytes, 502 UTF-16 units) -> 413', async () => {
      await bothPaths(
        (p) => put(server, server.adminKey, p, { content: '😀'.repeat(251) }),
        (res) => expectError(res, 413, MSG.tooLarge),
      );
    });

    it('a request body over the limit + 64 KiB -> 413 Content too large', async () => {
      const content = 'b'.repeat(LIMIT + 64 * 1024 + 10);
      await bothPaths(
        (p) => put(server, server.adminKey, p, { content }),
        (res) => expectError(res, 413, MSG.tooLarge),
      );
    });

    it('a body over the limit + 64 KiB sent chunked (no Content-Length) -> 413 Content too large', async () => {
      for (const path of ['bad/new.md', 'bad/existing.md']) {
        const res = await rawRequest(server, {
          method: 'PUT',
          path: `/api/v1/knowledge/items/${path}`,
          headers: { Authorization: `Bearer ${server.adminKey}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
          body: JSON.stringify({ content: 'c'.repeat(LIMIT + 64 * 1024 + 10) }),
        });
        expect(res.status, res.text).to.equal(413);
        expect(res.body).to.deep.equal({ success: false, error: MSG.tooLarge });
      }
    });

    it('a body over the limit + 64 KiB made of escapes and extra data, not content -> 413', async () => {
      // A small content but a huge body: the body limit applies whatever the body holds.
      const body = `{"content":"x","message":"${'\\u0061'.repeat(12_000)}"}`;
      expect(body.length).to.be.above(LIMIT + 64 * 1024);
      await bothPaths(
        (p) => putRaw(p, body),
        (res) => expectError(res, 413, MSG.tooLarge),
      );
    });
  });

  it('the repository passes git fsck --strict after all the bad input', async () => {
    await fsckStrict(server.gitdir());
  });
});

describe('HTTP content limit: at the limit is accepted', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ maxContentBytes: LIMIT });
  });
  after(() => server?.close());

  it(`content of exactly ${LIMIT} bytes -> 200 (ASCII and multi-byte)`, async () => {
    const ascii = 'a'.repeat(LIMIT);
    const res = await put(server, server.adminKey, 'limit/ascii.md', { content: ascii });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(itemOf(await get(server, server.adminKey, 'limit/ascii.md')).content).to.equal(ascii);
    const multi = 'é'.repeat(LIMIT / 2);
    const res2 = await put(server, server.adminKey, 'limit/multi.md', { content: multi });
    expect(res2.status, JSON.stringify(res2.body)).to.equal(200);
    expect(itemOf(await get(server, server.adminKey, 'limit/multi.md')).content).to.equal(multi);
  });

  it('a content within the limit whose JSON escaping makes the body much larger -> 200', async () => {
    // 1000 control characters: 1000 bytes of content, 6000 bytes of JSON.
    const content = '\u0001'.repeat(LIMIT);
    const res = await put(server, server.adminKey, 'limit/escaped.md', { content });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(itemOf(await get(server, server.adminKey, 'limit/escaped.md')).content).to.equal(content);
  });

  it('an update over the limit -> 413 and keeps the old content', async () => {
    const before = await commitCount(server.gitdir());
    expectError(await put(server, server.adminKey, 'limit/ascii.md', { content: 'z'.repeat(LIMIT + 1) }), 413, MSG.tooLarge);
    expect(await commitCount(server.gitdir())).to.equal(before);
    expect(itemOf(await get(server, server.adminKey, 'limit/ascii.md')).content).to.equal('a'.repeat(LIMIT));
  });
});
