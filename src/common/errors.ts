/**
 * Errors carry a string `code` and structured `data`, never an HTTP status
 * (the isomorphic-git style). `src/http/errorTable.ts` is the one place that
 * turns a code into a status and a client-facing message.
 */
export class KnowledgeError<D extends object = Record<string, unknown>> extends Error {
  readonly code: string;
  readonly data: D;
  constructor(code: string, message: string, data: D) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data;
  }
}

export function isKnowledgeError(err: unknown): err is KnowledgeError {
  return err instanceof KnowledgeError;
}

/** Node's system errors (ENOENT, EEXIST, ENOSPC...) carry a string code. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
