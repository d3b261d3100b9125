import { loadMcpSdk } from './sdk.js';
import { mcpServer } from './server.js';

/** Headers that describe this hop, not the message: the request handed to the SDK is rebuilt from the body read here. */
const HOP_HEADERS = new Set(['connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'expect']);

export interface McpAnswer {
  status: number;
  headers: Array<[string, string]>;
  /** '' for an answer with no body (a notification's 202). */
  text: string;
}

/**
 * One POST's exchange with the MCP SDK: a server bound to the caller's key and a stateless transport, both made for
 * this request and closed after it. The SDK is loaded by the first exchange, if the warm-up has not (sdk.ts).
 */
export async function mcpExchange(args: {
  server: Parameters<typeof mcpServer>[1];
  /** The endpoint's path, for the request rebuilt for the SDK. */
  path: string;
  headers: NodeJS.Dict<string | string[]>;
  body: string;
  parsed: unknown;
}): Promise<McpAnswer> {
  const sdk = await loadMcpSdk();
  const server = mcpServer(sdk, args.server);
  const transport = new sdk.Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(args.headers)) {
      if (value === undefined || HOP_HEADERS.has(name)) continue;
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const request = new Request(`http://localhost${args.path}`, { method: 'POST', headers, body: args.body });
    const response = await transport.handleRequest(request, args.parsed === undefined ? {} : { parsedBody: args.parsed });
    const answerHeaders: Array<[string, string]> = [];
    response.headers.forEach((value, name) => {
      if (!HOP_HEADERS.has(name)) answerHeaders.push([name, value]);
    });
    return { status: response.status, headers: answerHeaders, text: await response.text() };
  } finally {
    await transport.close();
    await server.close();
  }
}
