import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { InvalidInput } from '../domain/errors.js';
import { MAX_LIST_LIMIT } from '../domain/items.js';
import { MAX_SEARCH_LIMIT } from '../domain/search.js';
import { MAX_QUERY_LENGTH } from '../domain/searchQuery.js';

/**
 * Request bodies and query strings are checked by ajv schemas before any domain call.
 * Schemas are plain (no `nullable`): with type coercion, ajv turns `?limit=` into null
 * for a nullable field, and an empty or null value must be a 400, not "no limit".
 */
const ajv = new Ajv({ allErrors: false, coerceTypes: true, useDefaults: false });

export interface PutItemBody {
  content: string;
  message?: string;
  requiredReadPermission?: string;
  requiredWritePermission?: string;
}

const putItemBody = {
  type: 'object',
  required: ['content'],
  additionalProperties: false,
  properties: {
    content: { type: 'string' },
    message: { type: 'string' },
    requiredReadPermission: { type: 'string' },
    requiredWritePermission: { type: 'string' },
  },
} as const;

export interface ListQuery {
  prefix?: string;
  limit?: number;
  cursor?: string;
  content?: 'true' | 'false';
}

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    prefix: { type: 'string', maxLength: 256 },
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT },
    cursor: { type: 'string', minLength: 1, maxLength: 512 },
    content: { type: 'string', enum: ['true', 'false'] },
  },
} as const;

export interface SearchQuery {
  q: string;
  prefix?: string;
  limit?: number;
  cursor?: string;
}

const searchQuery = {
  type: 'object',
  required: ['q'],
  additionalProperties: false,
  properties: {
    // Characters are counted (and the 500 limit enforced) by the domain; this bound only keeps parsing cheap.
    q: { type: 'string', maxLength: 4 * MAX_QUERY_LENGTH },
    prefix: { type: 'string', maxLength: 256 },
    limit: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT },
    cursor: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;

const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

export interface GetItemQuery {
  version?: number;
  ref?: string;
}

const getItemQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { version: { type: 'integer', minimum: 1 }, ref: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

/** `GET /files/{path}`: the original bytes now, or of the n-th version. */
const getFileQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { version: { type: 'integer', minimum: 1 } },
} as const;

const diffQuery = {
  type: 'object',
  required: ['from', 'to'],
  additionalProperties: false,
  properties: { from: { type: 'integer', minimum: 1 }, to: { type: 'integer', minimum: 1 } },
} as const;

// No `since` is a first call: the head to ask from next time, and no changes (as the MCP tool does).
const changesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { since: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

/** GET /events: where to resume (the Last-Event-ID header, when sent, wins). */
const eventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { since: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

/** POST /webhooks: what the domain checks further (an http(s) URL, known kinds, a folder prefix). */
const createWebhookBody = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', minLength: 1, maxLength: 2048 },
    events: { type: 'array', minItems: 1, maxItems: 3, items: { type: 'string', maxLength: 32 } },
    prefix: { type: 'string', minLength: 1, maxLength: 256 },
  },
} as const;

const rollbackBody = {
  type: 'object',
  required: ['path', 'version'],
  additionalProperties: false,
  properties: { path: { type: 'string' }, version: { type: 'integer', minimum: 1 } },
} as const;

const pathBody = {
  type: 'object',
  required: ['path'],
  additionalProperties: false,
  properties: { path: { type: 'string' } },
} as const;

interface MoveBody {
  from: string;
  to: string;
  ifMatch?: string;
  message?: string;
}

/** An ETag as GET answers it, quoted or not; an empty one would be no condition at all. */
const ifMatchField = { type: 'string', minLength: 1, maxLength: 1024 } as const;

const moveBody = {
  type: 'object',
  required: ['from', 'to'],
  additionalProperties: false,
  properties: {
    from: { type: 'string' },
    to: { type: 'string' },
    ifMatch: ifMatchField,
    message: { type: 'string' },
  },
} as const;

/** `POST /commits`: the envelope here; each operation is checked by its own schema below (so a refusal names it). */
const commitBody = {
  type: 'object',
  required: ['operations'],
  additionalProperties: false,
  properties: {
    message: { type: 'string' },
    operations: { type: 'array', items: { type: 'object', required: ['op'], properties: { op: { enum: ['put', 'delete', 'move'] } } } },
  },
} as const;


const putOperation = {
  type: 'object',
  required: ['op', 'path', 'content'],
  additionalProperties: false,
  properties: {
    op: { const: 'put' },
    path: { type: 'string' },
    content: { type: 'string' },
    ifMatch: ifMatchField,
    requiredReadPermission: { type: 'string' },
    requiredWritePermission: { type: 'string' },
  },
} as const;

const deleteOperation = {
  type: 'object',
  required: ['op', 'path'],
  additionalProperties: false,
  properties: { op: { const: 'delete' }, path: { type: 'string' } },
} as const;

const moveOperation = {
  type: 'object',
  required: ['op', 'from', 'to'],
  additionalProperties: false,
  properties: { op: { const: 'move' }, from: { type: 'string' }, to: { type: 'string' }, ifMatch: ifMatchField },
} as const;

interface CommitBody {
  message?: string;
  operations: Array<{ op: 'put' | 'delete' | 'move' }>;
}

export type OperationBody =
  | { op: 'put'; path: string; content: string; ifMatch?: string; requiredReadPermission?: string; requiredWritePermission?: string }
  | { op: 'delete'; path: string }
  | { op: 'move'; from: string; to: string; ifMatch?: string };

/** `POST /revert`: which form (a commit, or a key and a time) is decided by the domain, with its own message. */
const revertBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    commitId: { type: 'string', maxLength: 64 },
    keyId: { type: 'string', maxLength: 128 },
    since: { type: 'string', maxLength: 64 },
    force: { type: 'boolean' },
  },
} as const;

export interface RevertBody {
  commitId?: string;
  keyId?: string;
  since?: string;
  force?: boolean;
}

const folderRuleBody = {
  type: 'object',
  additionalProperties: false,
  properties: { requiredReadPermission: { type: 'string' }, requiredWritePermission: { type: 'string' } },
} as const;

const createKeyBody = {
  type: 'object',
  required: ['name', 'role'],
  additionalProperties: false,
  // scopes: folder paths, checked (count, form, overlaps) by the domain's validateScopes.
  properties: { name: { type: 'string' }, role: { type: 'string' }, scopes: { type: 'array', items: { type: 'string' } } },
} as const;

/**
 * The schemas themselves, for the API description (src/http/openapi/): the OpenAPI document is made from
 * exactly what validates requests, so the two cannot drift apart.
 */
export const requestSchemas = {
  putItemBody,
  listQuery,
  searchQuery,
  noQuery,
  getItemQuery,
  diffQuery,
  changesQuery,
  rollbackBody,
  pathBody,
  moveBody,
  commitBody,
  putOperation,
  deleteOperation,
  moveOperation,
  folderRuleBody,
  createKeyBody,
  revertBody,
  getFileQuery,
  eventsQuery,
  createWebhookBody,
} as const;

/** Bodies are never coerced: `"content": 5` is an error, not "5". */
const strictAjv = new Ajv({ allErrors: false, coerceTypes: false });
const validators = {
  putItemBody: strictAjv.compile<PutItemBody>(putItemBody),
  rollbackBody: strictAjv.compile<{ path: string; version: number }>(rollbackBody),
  pathBody: strictAjv.compile<{ path: string }>(pathBody),
  moveBody: strictAjv.compile<MoveBody>(moveBody),
  commitBody: strictAjv.compile<CommitBody>(commitBody),
  putOperation: strictAjv.compile<OperationBody & { op: 'put' }>(putOperation),
  deleteOperation: strictAjv.compile<OperationBody & { op: 'delete' }>(deleteOperation),
  moveOperation: strictAjv.compile<OperationBody & { op: 'move' }>(moveOperation),
  revertBody: strictAjv.compile<RevertBody>(revertBody),
  folderRuleBody: strictAjv.compile<{ requiredReadPermission?: string; requiredWritePermission?: string }>(folderRuleBody),
  createKeyBody: strictAjv.compile<{ name: string; role: string; scopes?: string[] }>(createKeyBody),
  createWebhookBody: strictAjv.compile<{ url: string; events?: string[]; prefix?: string }>(createWebhookBody),
  listQuery: ajv.compile<ListQuery>(listQuery),
  noQuery: ajv.compile<Record<string, never>>(noQuery),
  getItemQuery: ajv.compile<GetItemQuery>(getItemQuery),
  getFileQuery: ajv.compile<{ version?: number }>(getFileQuery),
  diffQuery: ajv.compile<{ from: number; to: number }>(diffQuery),
  changesQuery: ajv.compile<{ since?: string }>(changesQuery),
  eventsQuery: ajv.compile<{ since?: string }>(eventsQuery),
  searchQuery: ajv.compile<SearchQuery>(searchQuery),
};

type Described = 'field' | 'query parameter' | 'argument';

function describe(error: ErrorObject | undefined, what: Described): string {
  if (!error) return `Invalid ${what}`;
  const name = error.instancePath.replace(/^\//, '');
  switch (error.keyword) {
    case 'additionalProperties':
      return `Unknown ${what} "${String(error.params.additionalProperty)}"`;
    case 'required':
      return `${String(error.params.missingProperty)} is required`;
    case 'type':
      if (!name) return what === 'argument' ? 'Arguments must be a JSON object' : 'Body must be a JSON object';
      return `${name} must be ${what === 'query parameter' ? '' : article(String(error.params.type))}${String(error.params.type)}`;
    case 'enum':
      return `${name} must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`;
    default:
      return `${name} ${error.message ?? 'is invalid'}`;
  }
}

const article = (word: string): string => (/^[aeiou]/.test(word) ? 'an ' : 'a ');

function check<T>(validate: ValidateFunction<T>, value: unknown, what: Described): T {
  if (!validate(value)) throw new InvalidInput({ reason: describe(validate.errors?.[0], what) });
  return value;
}

export const validateBody = {
  putItem: (body: unknown): PutItemBody => check(validators.putItemBody, body, 'field'),
  rollback: (body: unknown) => check(validators.rollbackBody, body, 'field'),
  path: (body: unknown) => check(validators.pathBody, body, 'field'),
  move: (body: unknown): MoveBody => check(validators.moveBody, body, 'field'),
  commit: (body: unknown): CommitBody => check(validators.commitBody, body, 'field'),
  /** One operation of a commit, by its `op` (already known to be one of the three). */
  operation: (op: { op: 'put' | 'delete' | 'move' }): OperationBody =>
    op.op === 'put'
      ? check(validators.putOperation, op, 'field')
      : op.op === 'delete'
        ? check(validators.deleteOperation, op, 'field')
        : check(validators.moveOperation, op, 'field'),
  revert: (body: unknown): RevertBody => check(validators.revertBody, body, 'field'),
  folderRule: (body: unknown) => check(validators.folderRuleBody, body, 'field'),
  createKey: (body: unknown) => check(validators.createKeyBody, body, 'field'),
  createWebhook: (body: unknown) => check(validators.createWebhookBody, body, 'field'),
};

/** Koa's query object may hold arrays for repeated parameters; a copy is validated (and coerced). */
export const validateQuery = {
  list: (query: Record<string, unknown>): ListQuery => check(validators.listQuery, { ...query }, 'query parameter'),
  none: (query: Record<string, unknown>): void => void check(validators.noQuery, { ...query }, 'query parameter'),
  getItem: (query: Record<string, unknown>): GetItemQuery => check(validators.getItemQuery, { ...query }, 'query parameter'),
  getFile: (query: Record<string, unknown>): { version?: number } => check(validators.getFileQuery, { ...query }, 'query parameter'),
  diff: (query: Record<string, unknown>) => check(validators.diffQuery, { ...query }, 'query parameter'),
  changes: (query: Record<string, unknown>) => check(validators.changesQuery, { ...query }, 'query parameter'),
  events: (query: Record<string, unknown>) => check(validators.eventsQuery, { ...query }, 'query parameter'),
  search: (query: Record<string, unknown>): SearchQuery => check(validators.searchQuery, { ...query }, 'query parameter'),
};

/**
 * A checker for an MCP tool's arguments: the same strict ajv (no coercion) and the
 * same messages as a request body's fields, so a tool refuses bad input as the route does.
 */
export function argumentChecker<T>(schema: object): (value: unknown) => T {
  const validate = strictAjv.compile<T>(schema);
  return (value) => check(validate, value ?? {}, 'argument');
}
