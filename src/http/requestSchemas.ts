import { MAX_LIST_LIMIT } from '../domain/itemReads.js';
import { MAX_SEARCH_LIMIT } from '../domain/search.js';
import { MAX_QUERY_LENGTH } from '../domain/searchQuery.js';

/**
 * The JSON Schemas of request bodies, query strings and (through argumentChecker) MCP arguments, with the
 * types they check: one source for validation.ts, which compiles them, and for the API description
 * (src/http/openapi/), which publishes them. Schemas are plain (no `nullable`): with type coercion, ajv
 * turns `?limit=` into null for a nullable field, and an empty or null value must be a 400, not "no limit".
 */

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

export interface MoveBody {
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

export interface CommitBody {
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
