import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { loadOnce } from '../../common/loadOnce.js';
import { withoutYoungGrowth } from '../../common/youngGeneration.js';

/** What the endpoint uses of the MCP SDK, loaded on first use (`loadMcpSdk`). */
export interface McpSdk {
  Server: typeof Server;
  Transport: typeof WebStandardStreamableHTTPServerTransport;
  types: typeof import('@modelcontextprotocol/sdk/types.js');
}

/**
 * The MCP SDK, loaded once: on the first POST /mcp, or by the warm-up just after the server listens
 * (http/warmUp.ts). It and its zod are some 170 modules, which a start no longer waits for (README, "What `serve`
 * costs to start"). Only the package is loaded late, never a module of ours: one imported here at run time could be
 * a second copy of a module already loaded another way (as CommonJS, as the tests once did), whose classes `instanceof`
 * would not know (eslint.config.js forbids it). Kept for the process's life, so loaded with V8's young generation
 * held (see withoutYoungGrowth). A load that failed is tried again by the next call (loadOnce).
 */
export const loadMcpSdk: () => Promise<McpSdk> = loadOnce(() =>
  withoutYoungGrowth(async () => {
    const [server, http, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/index.js'),
      import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    return { Server: server.Server, Transport: http.WebStandardStreamableHTTPServerTransport, types };
  }),
);
