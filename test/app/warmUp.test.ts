import { expect } from 'chai';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { api, startTestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';

/**
 * The warm-up (http/warmUp.ts) readies the request schemas and the MCP SDK once the server listens; a request that
 * arrives before it is done must do its own loading (loadOnce, the schemas' `compiled`), not find them missing.
 * Here the warm-up never finishes, so every request below is served as one that came first.
 */
describe('serve: requests that arrive before the warm-up is done', () => {
  it('are answered as after it: a checked body, a refused one, and MCP', async () => {
    let warmUps = 0;
    const server = await startTestServer({
      warmUp: () => {
        warmUps++;
        return new Promise<void>(() => {});
      },
    });
    try {
      const items = `${server.url}/api/v1/knowledge/items`;
      const bad = await api(`${items}/early/bad.md`, { method: 'PUT', key: server.adminKey, body: { content: 5 } });
      expect(bad.status).to.equal(400);
      expect(bad.body).to.deep.equal({ success: false, error: 'content must be a string' });
      const good = await api(`${items}/early/note.md`, { method: 'PUT', key: server.adminKey, body: { content: 'before the warm-up' } });
      expect(good.status).to.equal(200);

      const client = await connectMcp(server, server.adminKey);
      try {
        const read = (await client.callTool({ name: 'read', arguments: { path: 'early/note.md' } })) as CallToolResult;
        expect(read.isError).to.not.equal(true);
        expect((read.structuredContent as { item?: { content?: string } }).item?.content).to.equal('before the warm-up');
        const refused = (await client.callTool({ name: 'read', arguments: { path: 5 } })) as CallToolResult;
        expect(refused).to.deep.equal({ content: [{ type: 'text', text: 'path must be a string' }], isError: true });
      } finally {
        await client.close();
      }
      expect(warmUps).to.equal(1);
    } finally {
      await server.close();
    }
  });
});
