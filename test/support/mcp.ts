import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** An MCP SDK client connected to a server's POST /mcp over real HTTP with a key (and extra headers). */
export async function connectMcp(server: { url: string }, key: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'knowledge-store-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}`, ...headers } } }));
  return client;
}
