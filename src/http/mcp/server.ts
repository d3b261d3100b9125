import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isKnowledgeError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { toErrorResponse } from '../errorTable.js';
import { listResources, readResource, RESOURCE_TEMPLATE } from './resources.js';
import { READ_TOOLS } from './readTools.js';
import type { Tool, ToolContext } from './tool.js';
import { WRITE_TOOLS } from './writeTools.js';
import type { McpSdk } from './sdk.js';

/** Every tool the endpoint serves, by name (contract §11: the names are fixed). */
export const TOOLS: ReadonlyMap<string, Tool> = new Map([...READ_TOOLS, ...WRITE_TOOLS].map((t) => [t.name, t]));

const INSTRUCTIONS = [
  'A git-backed knowledge store: items are documents (markdown, JSON, text) at paths like "docs/setup.md".',
  'Find with `search` or `list`, read with `read` (it gives the etag), change with `edit` (one passage) or `write` (whole content, with if_match),',
  'and undo with `history` + `rollback`. Every change is a commit authored by your API key; you only ever see what your key may read.',
].join(' ');

/**
 * The MCP server of one request: stateless, so each POST gets a fresh one bound to the
 * caller's key (its organization, role and what it may read), and nothing is shared
 * between requests or keys. Tools answer from the same domain calls as the REST routes;
 * a refusal is a tool error (`isError: true`) carrying the REST answer's message.
 */
export function mcpServer(sdk: McpSdk, ctx: ToolContext & { logger: Logger; requestId: string; version: string }): Server {
  const { CallToolRequestSchema, ErrorCode: RpcError, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema } = sdk.types;
  const server = new sdk.Server({ name: 'knowledge-store', version: ctx.version }, { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS });

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...TOOLS.values()].map(({ name, description, inputSchema, annotations }) => ({
      name,
      title: annotations.title,
      description,
      inputSchema: inputSchema as { type: 'object' },
      annotations,
    })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const found = TOOLS.get(request.params.name);
    if (!found) throw new RpcFailure(RpcError.InvalidParams, `Unknown tool: ${request.params.name}`);
    try {
      const data = await found.call(request.params.arguments, ctx);
      return { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }], structuredContent: data as Record<string, unknown> };
    } catch (err) {
      return { content: [{ type: 'text', text: refusal(err, ctx, found.name) }], isError: true };
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, (request) => listResources(ctx, request.params?.cursor));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [RESOURCE_TEMPLATE] }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    try {
      return await readResource(ctx, request.params.uri);
    } catch (err) {
      // Resources have no isError: a refusal is a JSON-RPC error with the REST message.
      const notFound = isKnowledgeError(err) && err.code === 'ITEM_NOT_FOUND';
      throw new RpcFailure(notFound ? RESOURCE_NOT_FOUND : RpcError.InvalidParams, refusal(err, ctx, 'resources/read'));
    }
  });
  return server;
}

/**
 * A JSON-RPC error as the SDK sends it (its `code` and `message`). The SDK's McpError would
 * do, but it puts "MCP error <code>:" into its message, which the client then prefixes again.
 */
class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The code MCP gives "resource not found". */
const RESOURCE_NOT_FOUND = -32002;

/** The message the REST route would answer with; a fault of ours is logged, and its inside never shown. */
function refusal(err: unknown, ctx: { logger: Logger; requestId: string }, what: string): string {
  const response = toErrorResponse(err);
  if (response.fault) {
    ctx.logger.error('MCP call failed', { requestId: ctx.requestId, tool: what, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  return response.message;
}
