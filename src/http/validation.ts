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
const validators = {
  putItemBody: strictAjv.compile<PutItemBody>(s.putItemBody),
  rollbackBody: strictAjv.compile<{ path: string; version: number }>(s.rollbackBody),
  pathBody: strictAjv.compile<{ path: string }>(s.pathBody),
  moveBody: strictAjv.compile<MoveBody>(s.moveBody),
  commitBody: strictAjv.compile<CommitBody>(s.commitBody),
  putOperation: strictAjv.compile<OperationBody & { op: 'put' }>(s.putOperation),
  deleteOperation: strictAjv.compile<OperationBody & { op: 'delete' }>(s.deleteOperation),
  moveOperation: strictAjv.compile<OperationBody & { op: 'move' }>(s.moveOperation),
  revertBody: strictAjv.compile<RevertBody>(s.revertBody),
  folderRuleBody: strictAjv.compile<{ requiredReadPermission?: string; requiredWritePermission?: string }>(s.folderRuleBody),
  createKeyBody: strictAjv.compile<{ name: string; role: string; scopes?: string[] }>(s.createKeyBody),
  createWebhookBody: strictAjv.compile<{ url: string; events?: string[]; prefix?: string }>(s.createWebhookBody),
  listQuery: ajv.compile<ListQuery>(s.listQuery),
  noQuery: ajv.compile<Record<string, never>>(s.noQuery),
  getItemQuery: ajv.compile<GetItemQuery>(s.getItemQuery),
  getFileQuery: ajv.compile<{ version?: number }>(s.getFileQuery),
  diffQuery: ajv.compile<{ from: number; to: number }>(s.diffQuery),
  changesQuery: ajv.compile<{ since?: string }>(s.changesQuery),
  eventsQuery: ajv.compile<{ since?: string }>(s.eventsQuery),
  searchQuery: ajv.compile<SearchQuery>(s.searchQuery),
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
