import { integrationOperations } from './integrationOperations.js';
import { knowledgeOperations } from './knowledgeOperations.js';
import { errorAnswer, FAULTS, PARSER_ANSWERS } from './errorAnswers.js';
import type { OperationSpec, Schema } from './operation.js';
import { serviceOperations } from './serviceOperations.js';
import { componentSchemas, jsonRpcResponse } from './responses.js';

/** Every described route, the knowledge API first. */
export const operations: readonly OperationSpec[] = [...knowledgeOperations, ...integrationOperations, ...serviceOperations];

/**
 * A Koa path pattern (path-to-regexp 8, as @koa/router uses it) as an OpenAPI path: `:id` and the
 * wildcards `/*path` and `{/*path}` become `{id}`, `{path}`.
 */
export function openApiPath(route: string): string {
  return route.replace(/\{\/\*(\w+)\}/g, '/{$1}').replace(/\/\*(\w+)/g, '/{$1}').replace(/:(\w+)/g, '{$1}');
}

/** The pattern's parameters, in order. */
function pathParameters(route: string): string[] {
  return [...route.matchAll(/[:*](\w+)/g)].map((m) => m[1] as string);
}

/** A regular expression matching the request paths (raw, not decoded) that the Koa pattern matches. */
export function routeRegExp(route: string): RegExp {
  let source = '';
  for (const part of route.split(/(\{\/\*\w+\}|\/\*\w+|:\w+)/)) {
    if (part.startsWith('{/*')) source += '(?:/(.*))?';
    else if (part.startsWith('/*')) source += '/(.+)';
    else if (part.startsWith(':')) source += '([^/]+)';
    else source += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}/?$`);
}

const SECURITY: Record<OperationSpec['auth'], Array<Record<string, string[]>>> = {
  key: [{ bearer: [] }, { apiKeyHeader: [] }],
  none: [],
  git: [{ gitBasic: [] }],
  // KNOWLEDGE_METRICS: `local` needs nothing (from this machine), `token:<t>` a bearer token.
  metrics: [{}, { metricsToken: [] }],
};

const PERMISSION_NOTE: Record<NonNullable<OperationSpec['permission']>, string> = {
  'knowledge:read': 'Any role (reader, writer, admin); items the role may not read are hidden.',
  'knowledge:write': 'Roles with knowledge:write (writer, admin).',
  'knowledge:admin': 'Admin keys only.',
};

function failureContent(spec: OperationSpec): Schema {
  if (spec.failureMedia === 'text') return { 'text/plain': { schema: { type: 'string' } } };
  if (spec.failureMedia === 'json-rpc') return { 'application/json': { schema: jsonRpcResponse } };
  return { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
}

function content(answer: { json?: Schema; media?: string }): Schema | undefined {
  if (answer.json) return { 'application/json': { schema: answer.json } };
  if (answer.media) return { [answer.media]: { schema: { type: 'string' } } };
  return undefined;
}

function responses(spec: OperationSpec): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  // A header is described as always there only when every answer of that status carries it.
  const headerNames = new Map<string, readonly string[]>();
  const add = (status: number, description: string, body: Schema | undefined, headers: readonly string[] = []): void => {
    const key = String(status);
    const known = out[key];
    const before = headerNames.get(key);
    headerNames.set(key, before ? before.filter((h) => headers.includes(h)) : headers);
    if (known) {
      if (!String(known.description).includes(description)) known.description = `${String(known.description)}; ${description}`;
      return;
    }
    out[key] = { description, ...(body ? { content: body } : {}) };
  };
  add(spec.success.status, spec.success.description, content(spec.success), spec.success.headers);
  for (const [status, answer] of Object.entries(spec.extra ?? {})) add(Number(status), answer.description, content(answer));
  const failures = [...spec.errors.map(errorAnswer), ...PARSER_ANSWERS, FAULTS.internal, ...(spec.writes ? [FAULTS.diskFull] : [])];
  for (const { status, message, headers } of failures) add(status, message, failureContent(spec), headers);
  for (const [key, names] of headerNames) {
    const response = out[key];
    if (response && names.length > 0) response.headers = Object.fromEntries(names.map((h) => [h, { required: true, schema: { type: 'string' } }]));
  }
  return out;
}

function parameters(spec: OperationSpec): Schema[] {
  const out: Schema[] = pathParameters(spec.route).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
    ...(spec.route.includes(`*${name}`) ? { description: `May contain "/" (a path of folders and a name).` } : {}),
  }));
  const query = spec.query as { properties?: Record<string, Schema>; required?: string[] } | undefined;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    out.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema });
  }
  for (const [name, description] of Object.entries(spec.headers ?? {})) {
    out.push({ name, in: 'header', required: false, description, schema: { type: 'string' } });
  }
  return out;
}

function operation(spec: OperationSpec): Schema {
  const notes = [spec.description, spec.permission ? PERMISSION_NOTE[spec.permission] : undefined].filter(Boolean);
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(notes.length ? { description: notes.join('\n\n') } : {}),
    tags: [spec.tag],
    security: SECURITY[spec.auth],
    parameters: parameters(spec),
    ...(spec.body ? { requestBody: { required: true, content: { 'application/json': { schema: spec.body } } } } : {}),
    ...(spec.rawBody
      ? {
          requestBody: {
            required: true,
            description: spec.rawBody.description,
            content: Object.fromEntries(spec.rawBody.media.map((m) => [m, { schema: { type: 'string', format: 'binary' } }])),
          },
        }
      : {}),
    responses: responses(spec),
  };
}

/** The OpenAPI 3.1 document of every route in `operations`. */
export function openApiDocument(version: string): Schema {
  const paths: Record<string, Record<string, Schema>> = {};
  for (const spec of operations) {
    const path = openApiPath(spec.route);
    paths[path] = { ...paths[path], [spec.method]: operation(spec) };
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Knowledge store',
      version,
      description:
        'A git-backed knowledge store: items are files in one bare git repository per organization. ' +
        'Every API answer is `{success, data}` or `{success: false, error}`; a key of a role (reader, writer, admin) ' +
        'of one organization is sent as `Authorization: Bearer <key>` or `X-API-Key: <key>`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    tags: ['items', 'files', 'history', 'trash', 'folders', 'changes', 'search', 'keys', 'events', 'webhooks', 'mcp', 'git', 'operations', 'dashboard'].map((name) => ({ name })),
    paths,
    components: {
      schemas: componentSchemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key, `ks_<organization>_` and 43 random characters (older keys: `ks_` and the 43): `Authorization: Bearer ks_…`' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'The same API key in a header of its own.' },
        gitBasic: { type: 'http', scheme: 'basic', description: 'Any user name; an admin API key as the password.' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The token of KNOWLEDGE_METRICS=token:<t>.' },
      },
    },
  };
}
