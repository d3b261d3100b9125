import { MCP_PATH } from '../mcp/endpoint.js';
import { DASHBOARD_PREFIX } from '../routes/dashboard.js';
import { HEALTH_PATH, READY_PATH } from '../routes/health.js';
import { METRICS_PATH } from '../routes/metrics.js';
import { KEY_ERRORS, type OperationSpec } from './operation.js';
import { bareSuccess, jsonRpcResponse } from './responses.js';

/** Where the description and its page are served (no key: see README, API description). */
export const OPENAPI_PATH = '/api/v1/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * Routes beside the knowledge API: probes, metrics, MCP, git's smart HTTP, the dashboard and these docs.
 * Not JSON or not ours in shape: described by method, path, auth and media type.
 */
export const serviceOperations: readonly OperationSpec[] = [
  {
    method: 'get',
    route: HEALTH_PATH,
    operationId: 'health',
    summary: 'Liveness: the process is up',
    tag: 'operations',
    auth: 'none',
    success: { status: 200, description: 'Up', json: bareSuccess },
    errors: [],
  },
  {
    method: 'get',
    route: READY_PATH,
    operationId: 'ready',
    summary: 'Readiness: the data directory is writable and every organization open',
    tag: 'operations',
    auth: 'none',
    success: { status: 200, description: 'Ready', json: bareSuccess },
    errors: ['NOT_READY'],
  },
  {
    method: 'get',
    route: METRICS_PATH,
    operationId: 'metrics',
    summary: 'Prometheus metrics (local clients only, a token, or off, by KNOWLEDGE_METRICS)',
    tag: 'operations',
    auth: 'metrics',
    success: { status: 200, description: 'The Prometheus text exposition format', media: 'text/plain' },
    // KNOWLEDGE_METRICS=off: no route at all, the 404 any unknown path gets.
    errors: ['METRICS_REFUSED', 'METRICS_TOKEN_REQUIRED', 'ROUTE_NOT_FOUND'],
  },
  {
    method: 'get',
    route: OPENAPI_PATH,
    operationId: 'openapi',
    summary: 'This description (OpenAPI 3.1)',
    tag: 'operations',
    auth: 'none',
    success: { status: 200, description: 'The OpenAPI document', json: { type: 'object', required: ['openapi', 'paths'], properties: { openapi: { const: '3.1.0' }, paths: { type: 'object' } } } },
    errors: [],
  },
  {
    method: 'get',
    route: DOCS_PATH,
    operationId: 'docs',
    summary: 'This description as a web page (rendered on the server, no script, no CDN)',
    tag: 'operations',
    auth: 'none',
    success: { status: 200, description: 'An HTML page', media: 'text/html' },
    errors: [],
  },
  {
    method: 'post',
    route: MCP_PATH,
    operationId: 'mcp',
    summary: 'Model Context Protocol (Streamable HTTP, stateless, JSON answers)',
    description:
      'A JSON-RPC 2.0 message (or batch) in MCP\'s shape; tools and resources as README (MCP) lists them. ' +
      'Failures are JSON-RPC errors, the HTTP status telling the transport\'s verdict.',
    tag: 'mcp',
    auth: 'key',
    body: { type: ['object', 'array'] },
    success: { status: 200, description: 'The JSON-RPC response', json: jsonRpcResponse },
    extra: {
      202: { description: 'Accepted: the message was a notification or a response' },
      400: { description: 'A message that is not JSON-RPC (a parse error, an empty batch)', json: jsonRpcResponse },
      406: { description: 'Accept does not allow application/json and text/event-stream', json: jsonRpcResponse },
    },
    errors: [...KEY_ERRORS, 'ORIGIN_REFUSED', 'CONTENT_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'],
    failureMedia: 'json-rpc',
  },
  {
    method: 'get',
    route: '/git/:repo/info/refs',
    operationId: 'gitInfoRefs',
    summary: 'git smart HTTP: the ref advertisement (`git clone http://x:<admin key>@host/git/<org>.git`)',
    description: 'Only `service=git-upload-pack`: the repository is read-only over git.',
    tag: 'git',
    auth: 'git',
    success: { status: 200, description: 'The advertisement', media: 'application/x-git-upload-pack-advertisement' },
    errors: ['GIT_AUTH_REQUIRED', 'GIT_PUSH_REFUSED', 'FORBIDDEN', 'INVALID_INPUT', 'ORG_NOT_FOUND', 'TOO_MANY_REQUESTS'],
    failureMedia: 'text',
  },
  {
    method: 'post',
    route: '/git/:repo/git-upload-pack',
    operationId: 'gitUploadPack',
    summary: 'git smart HTTP: fetch negotiation and the pack',
    tag: 'git',
    auth: 'git',
    success: { status: 200, description: 'The pack', media: 'application/x-git-upload-pack-result' },
    errors: ['GIT_AUTH_REQUIRED', 'FORBIDDEN', 'INVALID_INPUT', 'ORG_NOT_FOUND', 'UNSUPPORTED_MEDIA_TYPE', 'CONTENT_TOO_LARGE', 'TOO_MANY_REQUESTS'],
    failureMedia: 'text',
  },
  {
    method: 'post',
    anyMethod: true,
    route: '/git/:repo/git-receive-pack',
    operationId: 'gitReceivePack',
    summary: 'git smart HTTP: pushing, refused (any method): the repository changes only through the API',
    tag: 'git',
    auth: 'none',
    success: { status: 403, description: 'Always', media: 'text/plain' },
    errors: ['GIT_PUSH_REFUSED', 'TOO_MANY_REQUESTS'],
    failureMedia: 'text',
  },
  {
    method: 'get',
    route: `${DASHBOARD_PREFIX}/`,
    operationId: 'dashboard',
    summary: 'The admin dashboard (an HTML page; it calls this API with the admin key typed into it)',
    tag: 'dashboard',
    auth: 'none',
    success: { status: 200, description: 'The page', media: 'text/html' },
    extra: { 503: { description: 'The dashboard is not built', media: 'text/plain' } },
    errors: [],
  },
  {
    method: 'get',
    route: '/',
    operationId: 'root',
    summary: 'Redirects a browser to the dashboard',
    tag: 'dashboard',
    auth: 'none',
    success: { status: 302, description: 'To /dashboard/' },
    errors: [],
  },
];

/**
 * Routes the router has and the description leaves out, with why: the dashboard's other spellings of its
 * page and its assets (what /dashboard/ loads). The route coverage test accepts these and no others.
 */
export const UNDESCRIBED_ROUTES: readonly string[] = [
  DASHBOARD_PREFIX,
  `${DASHBOARD_PREFIX}/index.html`,
  `${DASHBOARD_PREFIX}/app.js`,
  `${DASHBOARD_PREFIX}/app.css`,
];
