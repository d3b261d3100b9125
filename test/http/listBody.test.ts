import { expect } from 'chai';
import type { ItemView } from '../../src/domain/itemReads.js';
import { itemListBody, presentItem } from '../../src/http/presenters.js';
import type { ItemRecord } from '../../src/storage/repo/itemRecord.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { LIST, put } from './helpers.js';

/**
 * The list is streamed (so memory stays bounded), and must still be byte for byte the JSON it was when it was built
 * whole: `JSON.stringify({ success: true, data: { items, nextCursor? } })`.
 */

function view(i: number, content?: string): ItemView {
  const record: ItemRecord = {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    path: `docs/item-${i}.md`,
    itemType: 'text',
    fileKey: null,
    fileName: null,
    contentType: null,
    fileSize: null,
    requiredReadPermission: 'inherit',
    requiredWritePermission: i % 2 ? 'knowledge:admin' : 'inherit',
    createdAt: '2026-01-01T00:00:00.000Z',
    createdBy: 'key_x',
    updatedAt: '2026-01-02T00:00:00.000Z',
    updatedBy: 'key_x',
    deletedAt: null,
    deletedBy: null,
  };
  return content === undefined ? { record, etag: `e${i}` } : { record, content, etag: `e${i}` };
}

async function* from<T>(xs: T[]): AsyncGenerator<T> {
  for (const x of xs) yield x;
}

async function streamed(items: ItemView[], nextCursor?: string | null): Promise<{ text: string; pieces: number }> {
  let text = '';
  let pieces = 0;
  for await (const piece of itemListBody({ orgId: 'acme', items: from(items), ...(nextCursor === undefined ? {} : { nextCursor }) })) {
    text += piece;
    pieces++;
  }
  return { text, pieces };
}

function whole(items: ItemView[], nextCursor?: string | null): string {
  const data: Record<string, unknown> = { items: items.map((i) => presentItem('acme', i)) };
  if (nextCursor !== undefined) data.nextCursor = nextCursor;
  return JSON.stringify({ success: true, data });
}

describe('HTTP list body: streamed, byte for byte the JSON of the whole (unit)', () => {
  const awkward = 'quotes " and \\ backslashes, \n newlines, \t tabs, \u0000 nul, é, 😀, \u2028 and </script>';
  const cases: { name: string; items: ItemView[]; cursor?: string | null }[] = [
    { name: 'no items', items: [] },
    { name: 'no items, last page', items: [], cursor: null },
    { name: 'one item', items: [view(1, 'hello')] },
    { name: 'items without content', items: [view(1), view(2), view(3)] },
    { name: 'content that needs escaping', items: [view(1, awkward), view(2, '')] },
    { name: 'a page with a cursor', items: [view(1, 'a'), view(2, 'b')], cursor: 'ZG9jcy9pdGVtLTIubWQ' },
    { name: 'the last page', items: [view(1, 'a')], cursor: null },
    {
      name: 'big and small items mixed',
      items: [view(1, 'x'.repeat(200_000)), view(2, 'small'), view(3, awkward.repeat(5000)), view(4, 'y'.repeat(65_536)), view(5, 'z')],
      cursor: 'abc',
    },
    { name: '3,000 small items', items: Array.from({ length: 3000 }, (_, i) => view(i, `content ${i}`)) },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { text } = await streamed(c.items, c.cursor);
      expect(text === whole(c.items, c.cursor), 'same bytes').to.equal(true);
    });
  }

  it('comes in pieces: one per big item, small items gathered', async () => {
    expect((await streamed(Array.from({ length: 10 }, (_, i) => view(i, 'x'.repeat(100_000))))).pieces).to.be.at.least(10);
    expect((await streamed(Array.from({ length: 100 }, (_, i) => view(i, 'small')))).pieces).to.equal(1);
  });
});

describe('HTTP list: the streamed answer is canonical JSON', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
    for (const [i, content] of ['plain', 'é 😀 "quoted"\n', 'x'.repeat(150_000)].entries()) {
      expect((await put(server, server.adminKey, `s/${i}.md`, { content })).status).to.equal(200);
    }
  });
  after(() => server?.close());

  for (const query of ['', '?content=false', '?limit=2', '?prefix=s/&limit=5', '?limit=1&cursor=cy8wLm1k']) {
    it(`GET ${LIST}${query}: application/json, and exactly JSON.stringify of what it parses to`, async () => {
      const res = await fetch(`${server.url}${LIST}${query}`, { headers: { Authorization: `Bearer ${server.adminKey}` } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('Content-Type')).to.equal('application/json; charset=utf-8');
      const text = await res.text();
      expect(text === JSON.stringify(JSON.parse(text)), 'no whitespace, nothing reordered').to.equal(true);
      const body = JSON.parse(text) as { success: boolean; data: { items: unknown[]; nextCursor?: unknown } };
      expect(body.success).to.equal(true);
      expect(Object.keys(body.data)).to.deep.equal(query.includes('limit') ? ['items', 'nextCursor'] : ['items']);
    });
  }

  it('HEAD on the list answers without a body', async () => {
    const res = await api(`${server.url}${LIST}`, { method: 'HEAD', key: server.adminKey });
    expect(res.status).to.equal(200);
    expect(res.body).to.equal(undefined);
  });
});
