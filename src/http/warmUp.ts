import { loadMcpSdk } from './mcp/sdk.js';
import { prepareValidators } from './validation.js';

/**
 * What a start leaves until the server listens, done right after: the request schemas' compilation (~80 ms) and
 * the MCP SDK's modules (with the schemas, ~190 ms of a start on the test VM; README, "What `serve` costs to
 * start"). Before either is done, a request that needs it does it itself, once.
 */
export async function warmUp(): Promise<void> {
  prepareValidators();
  await loadMcpSdk();
}
