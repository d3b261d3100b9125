import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument, openApiPath, operations, routeRegExp } from '../../src/http/openapi/document.js';
import type { OperationSpec } from '../../src/http/openapi/operation.js';
import { UNDESCRIBED_ROUTES } from '../../src/http/openapi/serviceOperations.js';

/**
 * Every response the HTTP suites get is held against the API description (GET /api/v1/openapi.json):
 * the status must be one the matched operation lists, and a JSON body must match that status's schema.
 * The request helpers (support/server.ts `api`, http/helpers.ts `rawRequest`) call `checkResponse`; a
 * mismatch is recorded and fails the test it happened in (the root hook in support/openapiHooks.ts),
 * so a test that expected the answer still fails when the description does not tell it.
 */

const DOC_ID = 'https://knowledge-store.invalid/openapi.json';
type Described = { content?: Record<string, unknown>; headers?: Record<string, { required?: boolean }> };
const doc = openApiDocument('test') as { paths: Record<string, Record<string, { responses: Record<string, Described> }>> };

const ajv = new Ajv2020({ strict: false, allErrors: false });
ajv.addFormat('date-time', { type: 'string', validate: (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)) });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addSchema({ ...doc, $id: DOC_ID });

const validators = new Map<string, ValidateFunction>();
const pointer = (...parts: string[]): string => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function validatorFor(path: string, method: string, status: string, media: string): ValidateFunction {
  const ref = `${DOC_ID}#/${pointer('paths', path, method, 'responses', status, 'content', media, 'schema')}`;
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  return validate;
}

const compiled = operations.map((spec) => ({ spec, regexp: routeRegExp(spec.route), path: openApiPath(spec.route) }));
const undescribed = UNDESCRIBED_ROUTES.map((route) => routeRegExp(route));

/** The operation a request lands on, as Koa's router would pick it (the first pattern that matches). */
export function matchOperation(method: string, urlPath: string): { spec: OperationSpec; path: string } | 'other-method' | undefined {
  const wanted = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  const matching = compiled.filter((c) => c.regexp.test(urlPath));
  const hit = matching.find((c) => c.spec.method === wanted || c.spec.anyMethod);
  if (hit) return { spec: hit.spec, path: hit.path };
  return matching.length > 0 ? 'other-method' : undefined;
}

export interface CheckedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string;
  /** The parsed JSON body; undefined when there is none or it is not JSON. */
  body: unknown;
  /** The body as text (empty when there is none). */
  text: string;
  /** A response header by name, when the caller has them. */
  header?: (name: string) => string | null | undefined;
}

/** An answer no operation of the path describes: another method (405), or an unknown route (404), or auth first. */
function checkUndescribed(r: CheckedResponse, urlPath: string, otherMethod: boolean): string | undefined {
  if (undescribed.some((re) => re.test(urlPath))) return undefined;
  const mcpOrGit = urlPath === '/mcp' || urlPath.startsWith('/git/');
  if (r.method === 'OPTIONS' && r.status === 200) return undefined;
  if (r.status === 405 && r.header && !r.header('Allow')) return '405 without Allow';
  // Node's HTTP parser answers before any route: 400, 408, 431 (see PARSER_ANSWERS).
  const allowed = [...(otherMethod ? [405] : [404, 405]), 400, 401, 408, 413, 415, 429, 431];
  if (!allowed.includes(r.status)) return `status ${r.status} for ${otherMethod ? 'a method the path does not answer' : 'an unknown route'}`;
  if (r.method === 'HEAD' || mcpOrGit) return undefined;
  return errorShape(r.body);
}

const errorEnvelope = ajv.compile({ $ref: `${DOC_ID}#/components/schemas/Error` });

function errorShape(body: unknown): string | undefined {
  return errorEnvelope(body) ? undefined : `not an error envelope: ${ajv.errorsText(errorEnvelope.errors)}`;
}

/** Why the response breaks the description, or undefined when it keeps to it. */
export function responseMismatch(r: CheckedResponse): string | undefined {
  // Not `new URL`: it would resolve `..` and `%2e%2e` that the server sees as they are sent.
  const urlPath = r.url.replace(/^https?:\/\/[^/]+/, '').split(/[?#]/)[0] ?? '';
  const match = matchOperation(r.method, urlPath);
  if (match === undefined || match === 'other-method') return checkUndescribed(r, urlPath, match === 'other-method');
  const { spec, path } = match;
  const responses = doc.paths[path]?.[spec.method]?.responses ?? {};
  const described = responses[String(r.status)];
  if (!described) return `status ${r.status} is not described for ${spec.method.toUpperCase()} ${path} (described: ${Object.keys(responses).join(', ')})`;
  for (const [name, header] of Object.entries(described.headers ?? {})) {
    if (header.required && r.header && !r.header(name)) return `${spec.operationId} ${r.status} without its ${name} header`;
  }
  if (r.method === 'HEAD' || r.status === 304 || r.status === 302 || r.text === '') return undefined;
  const media = Object.keys(described.content ?? {});
  const type = r.contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (media.length === 0) return `status ${r.status} of ${spec.operationId} has a ${type} body the description does not tell`;
  if (!media.includes(type) && !media.includes('*/*')) return `${spec.operationId} ${r.status} answered ${type}, described: ${media.join(', ')}`;
  if (type !== 'application/json') return undefined;
  if (r.body === undefined) return `${spec.operationId} ${r.status}: the body is not JSON`;
  const validate = validatorFor(path, spec.method, String(r.status), type);
  if (!validate(r.body)) return `${spec.operationId} ${r.status}: ${ajv.errorsText(validate.errors)}`;
  return undefined;
}

/**
 * Mismatches seen since the hook last looked (support/openapiHooks.ts fails the test with them). Kept on
 * globalThis: mocha's --require may load this module through CommonJS and the tests through ESM, two
 * instances that must share one list.
 */
const SHARED = Symbol.for('knowledge-store.openapi-mismatches');
const shared = globalThis as typeof globalThis & { [SHARED]?: string[] };
export const mismatches: string[] = (shared[SHARED] ??= []);

/** Records a mismatch (with the request and a piece of the body, to find it again). */
export function checkResponse(r: CheckedResponse): void {
  const why = responseMismatch(r);
  if (why) mismatches.push(`${r.method} ${r.url} -> ${r.status}: ${why}\n      body: ${r.text.slice(0, 300)}`);
}
