/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of what the API answers: the envelopes and the
 * resources the presenters write (src/http/presenters.ts). Objects are closed (`additionalProperties:
 * false`) so that a field added to a presenter without its description here fails the response check
 * the tests run on every answer (test/support/openapiCheck.ts).
 */

type Schema = Record<string, unknown>;

const string = { type: 'string' } as const;
const nullableString = { type: ['string', 'null'] } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const commitId = { type: 'string', pattern: '^[0-9a-f]{40}$', description: 'A commit of the organization, full hex id.' } as const;

function closed(properties: Record<string, Schema>, optional: readonly string[] = []): Schema {
  return {
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    properties,
  };
}

/** The KnowledgeItem resource's fields, in the order presentItem writes them. */
const itemProperties: Record<string, Schema> = {
  id: { type: 'string', format: 'uuid' },
  organizationId: string,
  path: string,
  content: { type: 'string', description: 'Absent from lists asked with content=false, from trash entries and search results.' },
  itemType: string,
  fileKey: nullableString,
  fileName: nullableString,
  contentType: nullableString,
  fileSize: { type: ['integer', 'null'] },
  requiredReadPermission: string,
  requiredWritePermission: nullableString,
  createdAt: timestamp,
  updatedAt: timestamp,
};

/** Named schemas, referenced as `#/components/schemas/<name>`. */
export const componentSchemas: Record<string, Schema> = {
  KnowledgeItem: closed(itemProperties, ['content']),
  TrashItem: {
    ...closed({ ...itemProperties, deletedAt: { type: ['string', 'null'], format: 'date-time' }, deletedBy: nullableString }, ['content']),
    description: 'A deleted item, without its content: who deleted it and when.',
  },
  Version: closed({
    version: { type: 'integer', minimum: 1 },
    commitId,
    action: string,
    message: string,
    author: closed({ name: string, keyId: string }),
    timestamp,
  }),
  Change: closed({
    id: string,
    path: string,
    change: { enum: ['created', 'updated', 'deleted'] },
    commitId,
    timestamp,
  }),
  FolderRule: closed({ folder: string, requiredReadPermission: string, requiredWritePermission: string, updatedAt: { type: ['string', 'null'], format: 'date-time' } }),
  ApiKey: closed({
    id: string,
    organizationId: string,
    name: string,
    role: { enum: ['reader', 'writer', 'admin'] },
    createdAt: timestamp,
    lastUsedAt: { type: ['string', 'null'], format: 'date-time' },
    revokedAt: { type: ['string', 'null'], format: 'date-time' },
    scopes: { type: ['array', 'null'], items: string, description: 'The folders the key is confined to; null: the whole organization.' },
  }),
  RevertConflict: closed({
    path: string,
    why: string,
    current: { oneOf: [{ type: 'null' }, closed({ version: { type: 'integer', minimum: 1 }, etag: string })] },
  }),
  SearchResult: closed({ path: string, score: { type: 'number' }, snippet: string, item: { $ref: '#/components/schemas/KnowledgeItem' } }),
  CommitResult: {
    oneOf: [
      closed({ op: { const: 'put' }, item: { $ref: '#/components/schemas/KnowledgeItem' }, etag: string, changed: { type: 'boolean' } }),
      closed({ op: { const: 'move' }, item: { $ref: '#/components/schemas/KnowledgeItem' }, etag: string }),
      closed({ op: { const: 'delete' }, path: string, deleted: { const: true } }),
    ],
  },
  Delivery: closed({
    id: string,
    commitId,
    status: { enum: ['pending', 'delivered', 'failed'] },
    attempts: {
      type: 'array',
      items: closed({ at: timestamp, status: { type: ['integer', 'null'] }, error: nullableString, ms: { type: 'number' } }),
    },
    nextAttemptAt: { type: ['string', 'null'], format: 'date-time' },
  }),
  Webhook: closed({
    id: string,
    url: string,
    events: { type: 'array', items: string },
    prefix: nullableString,
    createdBy: string,
    createdAt: timestamp,
    cursor: { type: ['string', 'null'], description: 'The last commit the hook is done with.' },
    state: { enum: ['active', 'stopped'] },
    stoppedReason: nullableString,
    lastDelivery: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Delivery' }] },
  }),
  Mirror: closed({
    url: { type: 'string', description: 'The git remote, any password in it hidden.' },
    state: { enum: ['ok', 'pushing', 'failing', 'rejected'], description: 'rejected: the mirror refused a push that is not a fast-forward (nothing is forced).' },
    pushedCommit: { type: ['string', 'null'], pattern: '^[0-9a-f]{40}$', description: 'The last commit the mirror is known to have as main.' },
    pushedAt: { type: ['string', 'null'], format: 'date-time' },
    lagCommits: { type: 'integer', minimum: 0, description: 'Commits on main not yet on the mirror (all of them until a first push succeeds).' },
    lagSeconds: { type: 'number', minimum: 0, description: 'Age of the oldest commit not yet on the mirror.' },
    failures: { type: 'integer', minimum: 0, description: 'Failed pushes in a row.' },
    lastError: { type: ['string', 'null'], description: 'What git said at the last failure.' },
    nextRetryAt: { type: ['string', 'null'], format: 'date-time' },
  }),
  Error: {
    ...closed({ success: { const: false }, error: { type: 'string', minLength: 1 }, data: closed({ failedOperation: { type: 'integer', minimum: 0 } }) }, ['data']),
    description: 'Every failure: the status says what kind, `error` says what in words. POST /commits adds the failed operation\'s index.',
  },
};

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** `{ success: true, data: <data> }`. */
export function successEnvelope(data: Schema): Schema {
  return closed({ success: { const: true }, data });
}

/** `{ success: true }` and nothing else (the probes). */
export const bareSuccess: Schema = closed({ success: { const: true } });

/** The data of each success answer, by what the route answers. */
export const data = {
  item: closed({ item: ref('KnowledgeItem') }),
  items: closed({ items: { type: 'array', items: ref('KnowledgeItem') }, nextCursor: { type: ['string', 'null'] } }, ['nextCursor']),
  message: closed({ message: string }),
  versions: closed({ versions: { type: 'array', items: ref('Version') } }),
  diff: closed({ from: { type: 'integer' }, to: { type: 'integer' }, diff: { type: 'string', description: 'A unified diff.' } }),
  trash: closed({ items: { type: 'array', items: ref('TrashItem') } }),
  folders: closed({ folders: { type: 'array', items: ref('FolderRule') } }),
  folder: closed({ folder: ref('FolderRule') }),
  changes: closed({ head: { ...commitId, type: ['string', 'null'] }, changes: { type: 'array', items: ref('Change') } }),
  search: closed({ results: { type: 'array', items: ref('SearchResult') }, nextCursor: { type: ['string', 'null'] } }),
  commit: closed({ commitId: { ...commitId, type: ['string', 'null'], description: 'null when nothing changed (no commit made).' }, items: { type: 'array', items: ref('CommitResult') } }),
  keys: closed({ keys: { type: 'array', items: ref('ApiKey') } }),
  key: closed({ key: ref('ApiKey') }),
  createdKey: closed({ key: ref('ApiKey'), secret: { type: 'string', description: 'Shown once, never again.' } }),
  allow: closed({ allow: { type: 'array', items: string } }),
  webhook: closed({ webhook: ref('Webhook'), secret: { type: 'string', description: 'The HMAC signing secret, shown once.' } }),
  webhooks: closed({ webhooks: { type: 'array', items: ref('Webhook') } }),
  replication: closed({
    organizationId: string,
    head: { ...commitId, type: ['string', 'null'] },
    mirrors: { type: 'array', items: ref('Mirror') },
  }),
  deliveries: closed({ deliveries: { type: 'array', items: ref('Delivery') } }),
  revert: closed({
    commitId: { ...commitId, type: ['string', 'null'], description: 'null when nothing needed undoing.' },
    reverted: { type: 'array', items: string, description: 'Where each reverted item is now.' },
    conflicts: { type: 'array', items: ref('RevertConflict') },
  }),
} satisfies Record<string, Schema>;

/** A JSON-RPC 2.0 response (or batch of them) as MCP answers; the tools' results are MCP's own schemas. */
export const jsonRpcResponse: Schema = {
  oneOf: [
    { $ref: '#/components/schemas/JsonRpcResponse' },
    { type: 'array', items: { $ref: '#/components/schemas/JsonRpcResponse' } },
  ],
};

componentSchemas.JsonRpcResponse = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer', 'null'] },
    result: { type: 'object' },
    error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: string } },
  },
};
