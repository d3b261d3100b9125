import { KnowledgeError, type ErrorCode } from '../../common/errors.js';
import { toErrorResponse } from '../errorTable.js';

/** What the message of a row that passes the error's own message on looks like in the description. */
const OWN_MESSAGE = '(a message naming the problem)';

/**
 * The status and message the error table answers a code with, read from the table itself (a row is
 * asked with a stand-in error), so the description cannot tell another status than the server answers.
 */
export function errorAnswer(code: ErrorCode): { status: number; message: string; headers: string[] } {
  const stand = new KnowledgeError(code, OWN_MESSAGE, {
    quota: { limit: 1, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 },
    index: 0,
    cause: new KnowledgeError('INVALID_INPUT', OWN_MESSAGE, {}),
  });
  const { status, message, headers } = toErrorResponse(stand);
  // Connection: close is about the hop, not the answer (and not every client sees it).
  return { status, message, headers: Object.keys(headers ?? {}).filter((h) => h.toLowerCase() !== 'connection') };
}

/** Answers of faults, which no code names: every route may fail, a write may find the disk full. */
export const FAULTS = {
  internal: { status: 500, message: 'Internal server error', headers: [] },
  diskFull: { status: 507, message: 'Insufficient storage', headers: [] },
} as const;

/** What node's HTTP parser refuses before any route sees the request (src/http/listen.ts), on any path. */
export const PARSER_ANSWERS = [
  { status: 400, message: 'Bad request', headers: [] },
  { status: 408, message: 'Request timeout', headers: [] },
  { status: 431, message: 'Request header fields too large', headers: [] },
] as const;
