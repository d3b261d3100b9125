import { checkResponse, mismatches } from './openapiCheck.js';

/**
 * Every `fetch` a test makes to one of our servers is held against the API description, whoever makes it
 * (the request helpers, the MCP SDK's client, a test's own fetch). Our servers are told apart by the
 * X-Request-Id every answer of theirs carries: a webhook receiver's or another program's answer is left
 * alone. The body is read from a clone before the caller gets the response, so a mismatch is recorded
 * within the test that caused it; an event stream (endless) is checked by status and headers alone.
 * Wrapped once, however often this module is loaded (mocha's --require loaded it as CommonJS and as an ES module
 * while the suite ran as CommonJS).
 */
const WRAPPED = Symbol.for('knowledge-store.openapi-fetch');
const shared = globalThis as typeof globalThis & { [WRAPPED]?: true };
if (!shared[WRAPPED]) {
  shared[WRAPPED] = true;
  const original = globalThis.fetch;
  globalThis.fetch = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const res = await original(input, init);
    if (!res.headers.get('X-Request-Id')) return res;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const contentType = res.headers.get('Content-Type') ?? '';
    const streamed = contentType.startsWith('text/event-stream');
    const text = streamed || method === 'HEAD' ? '' : await res.clone().text();
    let body: unknown;
    if (contentType.includes('json') && text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    }
    checkResponse({ method, url: res.url, status: res.status, contentType, body, text, header: (n) => res.headers.get(n) });
    return res;
  };
}

/**
 * Mocha root hooks (loaded by .mocharc.json): a test during which a response broke the API description
 * fails, with every mismatch listed. Cleared first, so the next test starts clean.
 */
export const mochaHooks = {
  afterEach(): void {
    if (mismatches.length === 0) return;
    const found = mismatches.splice(0);
    throw new Error(`${found.length} response(s) do not match the API description (src/http/openapi/):\n  ${found.join('\n  ')}`);
  },
};
