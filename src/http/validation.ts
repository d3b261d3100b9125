import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { InvalidInput } from '../domain/errors.js';
import {
  requestSchemas as s,
  type CommitBody,
  type GetItemQuery,
  type ListQuery,
  type MoveBody,
  type OperationBody,
  type PutItemBody,
  type RevertBody,
  type SearchQuery,
} from './requestSchemas.js';

/**
 * Request bodies and query strings are checked by ajv, with the schemas of requestSchemas.ts, before any
 * domain call. Query strings are coerced (they are text); bodies never are.
 */
const ajv = new Ajv({ allErrors: false, coerceTypes: true, useDefaults: false });

/** Bodies are never coerced: `"content": 5` is an error, not "5". */
const strictAjv = new Ajv({ allErrors: false, coerceTypes: false });
/**
 * Each schema is compiled on first use, not when the module loads: the twenty of them took ~80 ms of every start
 * (profiled), before the server could listen. `prepareValidators` compiles them all once it listens.
 */
function compiled<T>(compile: () => ValidateFunction<T>): () => ValidateFunction<T> {
  let validate: ValidateFunction<T> | undefined;
  return () => (validate ??= compile());
}

const validators = {
  putItemBody: compiled(() => strictAjv.compile<PutItemBody>(s.putItemBody)),
  rollbackBody: compiled(() => strictAjv.compile<{ path: string; version: number }>(s.rollbackBody)),
  pathBody: compiled(() => strictAjv.compile<{ path: string }>(s.pathBody)),
  moveBody: compiled(() => strictAjv.compile<MoveBody>(s.moveBody)),
  commitBody: compiled(() => strictAjv.compile<CommitBody>(s.commitBody)),
  putOperation: compiled(() => strictAjv.compile<OperationBody & { op: 'put' }>(s.putOperation)),
  deleteOperation: compiled(() => strictAjv.compile<OperationBody & { op: 'delete' }>(s.deleteOperation)),
  moveOperation: compiled(() => strictAjv.compile<OperationBody & { op: 'move' }>(s.moveOperation)),
  revertBody: compiled(() => strictAjv.compile<RevertBody>(s.revertBody)),
  folderRuleBody: compiled(() => strictAjv.compile<{ requiredReadPermission?: string; requiredWritePermission?: string }>(s.folderRuleBody)),
  createKeyBody: compiled(() => strictAjv.compile<{ name: string; role: string; scopes?: string[] }>(s.createKeyBody)),
  createWebhookBody: compiled(() => strictAjv.compile<{ url: string; events?: string[]; prefix?: string }>(s.createWebhookBody)),
  listQuery: compiled(() => ajv.compile<ListQuery>(s.listQuery)),
  noQuery: compiled(() => ajv.compile<Record<string, never>>(s.noQuery)),
  getItemQuery: compiled(() => ajv.compile<GetItemQuery>(s.getItemQuery)),
  getFileQuery: compiled(() => ajv.compile<{ version?: number }>(s.getFileQuery)),
  diffQuery: compiled(() => ajv.compile<{ from: number; to: number }>(s.diffQuery)),
  changesQuery: compiled(() => ajv.compile<{ since?: string }>(s.changesQuery)),
  eventsQuery: compiled(() => ajv.compile<{ since?: string }>(s.eventsQuery)),
  searchQuery: compiled(() => ajv.compile<SearchQuery>(s.searchQuery)),
};

/** Compiles every request schema now (after `listening`), so that no first request of a route pays for it. */
export function prepareValidators(): void {
  for (const validator of Object.values(validators)) validator();
}

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
  putItem: (body: unknown): PutItemBody => check(validators.putItemBody(), body, 'field'),
  rollback: (body: unknown) => check(validators.rollbackBody(), body, 'field'),
  path: (body: unknown) => check(validators.pathBody(), body, 'field'),
  move: (body: unknown): MoveBody => check(validators.moveBody(), body, 'field'),
  commit: (body: unknown): CommitBody => check(validators.commitBody(), body, 'field'),
  /** One operation of a commit, by its `op` (already known to be one of the three). */
  operation: (op: { op: 'put' | 'delete' | 'move' }): OperationBody =>
    op.op === 'put'
      ? check(validators.putOperation(), op, 'field')
      : op.op === 'delete'
        ? check(validators.deleteOperation(), op, 'field')
        : check(validators.moveOperation(), op, 'field'),
  revert: (body: unknown): RevertBody => check(validators.revertBody(), body, 'field'),
  folderRule: (body: unknown) => check(validators.folderRuleBody(), body, 'field'),
  createKey: (body: unknown) => check(validators.createKeyBody(), body, 'field'),
  createWebhook: (body: unknown) => check(validators.createWebhookBody(), body, 'field'),
};

/** Koa's query object may hold arrays for repeated parameters; a copy is validated (and coerced). */
export const validateQuery = {
  list: (query: Record<string, unknown>): ListQuery => check(validators.listQuery(), { ...query }, 'query parameter'),
  none: (query: Record<string, unknown>): void => void check(validators.noQuery(), { ...query }, 'query parameter'),
  getItem: (query: Record<string, unknown>): GetItemQuery => check(validators.getItemQuery(), { ...query }, 'query parameter'),
  getFile: (query: Record<string, unknown>): { version?: number } => check(validators.getFileQuery(), { ...query }, 'query parameter'),
  diff: (query: Record<string, unknown>) => check(validators.diffQuery(), { ...query }, 'query parameter'),
  changes: (query: Record<string, unknown>) => check(validators.changesQuery(), { ...query }, 'query parameter'),
  events: (query: Record<string, unknown>) => check(validators.eventsQuery(), { ...query }, 'query parameter'),
  search: (query: Record<string, unknown>): SearchQuery => check(validators.searchQuery(), { ...query }, 'query parameter'),
};

/**
 * A checker for an MCP tool's arguments: the same strict ajv (no coercion) and the
 * same messages as a request body's fields, so a tool refuses bad input as the route does.
 */
export function argumentChecker<T>(schema: object): (value: unknown) => T {
  // Compiled on the tool's first call, as the request schemas are on their first use (not at every start).
  const validate = compiled(() => strictAjv.compile<T>(schema));
  return (value) => check(validate(), value ?? {}, 'argument');
}
