import type { Clock } from '../../common/clock.js';
import type { Actor } from '../../domain/keys.js';
import type { OrgRepo } from '../../storage/repo/orgRepo.js';
import type { SearchTime } from '../searchTime.js';
import { argumentChecker } from '../validation.js';

/** What every tool call gets: the caller as its key made it, and the settings the routes use. */
export interface ToolContext {
  actor: Actor;
  repo: OrgRepo;
  maxContentBytes: number;
  clock: Clock;
  /** Each key's search time, shared with GET /search. */
  searchTime: SearchTime;
}

/** MCP's tool annotations: hints a client uses to decide what to ask its user before calling. */
export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint: false;
}

/** A tool as the MCP server lists and calls it: its arguments are checked before `call` reaches the domain. */
export interface Tool {
  name: string;
  description: string;
  inputSchema: object;
  annotations: ToolAnnotations;
  call(args: unknown, ctx: ToolContext): Promise<object>;
}

/**
 * Declares a tool: a JSON Schema for its arguments (checked by ajv, strictly: `"version": "2"` is
 * refused, never coerced) and a function from the checked arguments to the answer's data.
 */
export function tool<A>(def: {
  name: string;
  description: string;
  inputSchema: object;
  annotations: ToolAnnotations;
  run(args: A, ctx: ToolContext): Promise<object>;
}): Tool {
  const check = argumentChecker<A>(def.inputSchema);
  const { run, ...listed } = def;
  return { ...listed, call: (args, ctx) => run(check(args), ctx) };
}

/** Hints for a tool that only reads. */
export const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;
