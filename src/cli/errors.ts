import { CommanderError } from 'commander';
import { ConfigError } from '../app/config.js';
import { isKnowledgeError } from '../common/errors.js';
import { ImportRefused } from '../domain/orgImport.js';

/**
 * How the command line fails, in the shape of `gh` and `kubectl`: exit 2 for a usage error (an unknown
 * command or option, a missing argument, a bad option value: the command never ran), exit 1 for a
 * failure of the work itself. These codes belong to the CLI alone: the HTTP error table never sees them.
 */
type CliErrorCode =
  /** The command line is wrong: exit 2. */
  | 'USAGE_ERROR'
  /** The server answered with an error (its `error` message is ours). */
  | 'API_ERROR'
  /** Nothing answered at the URL (refused, unknown host, timed out). */
  | 'CONNECTION_FAILED';

export class CliError<D extends object = Record<string, unknown>> extends Error {
  readonly code: CliErrorCode;
  readonly data: D;
  constructor(code: CliErrorCode, message: string, data: D) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data;
  }
}

/** A command line that cannot run as given (found by a command itself, after commander parsed it). */
export class UsageError extends CliError<Record<string, never>> {
  constructor(message: string) {
    super('USAGE_ERROR', message, {});
  }
}

/** The server refused: its status and its own message (and, for `POST /commits`, which operation it refused). */
export class ApiError extends CliError<{ status: number; url: string; failedOperation?: number }> {
  constructor(data: { status: number; url: string; message: string; failedOperation?: number }) {
    super('API_ERROR', data.message, { status: data.status, url: data.url, ...(data.failedOperation !== undefined ? { failedOperation: data.failedOperation } : {}) });
  }
}

export class ConnectionFailed extends CliError<{ url: string }> {
  constructor(data: { url: string; reason: string }) {
    super('CONNECTION_FAILED', `cannot reach ${data.url}: ${data.reason}`, { url: data.url });
  }
}

/** What a failure shows: the line on stderr (or the JSON object, with --json) and the exit code. */
interface FailureReport {
  exitCode: 1 | 2;
  /** Shown as `knowledge-store: <message>`, or as `error` in JSON. */
  message: string;
  /** `{ error, code, ...}` for --json. */
  json: { error: string; code: string; status?: number; failedOperation?: number; problems?: string[] };
  /** Lines printed under the message (the problems of a refused import). */
  details: string[];
  /** A fault of ours rather than of the input or the store: its stack is worth printing with LOG_LEVEL=debug. */
  unexpected: boolean;
}

export function reportFailure(err: unknown): FailureReport {
  if (err instanceof CommanderError) {
    // commander's messages start with "error: "; the prefix says nothing in JSON.
    // A command group run without its command ends in commander's help, "(outputHelp)" as its message.
    const message = err.code === 'commander.help' ? 'a command is required (see --help)' : err.message.replace(/^error: /, '');
    return { exitCode: 2, message, json: { error: message, code: 'USAGE_ERROR' }, details: [], unexpected: false };
  }
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof CliError) {
    const status = err instanceof ApiError ? { status: err.data.status, ...(err.data.failedOperation !== undefined ? { failedOperation: err.data.failedOperation } : {}) } : {};
    return { exitCode: err.code === 'USAGE_ERROR' ? 2 : 1, message, json: { error: message, code: err.code, ...status }, details: [], unexpected: false };
  }
  if (err instanceof ImportRefused) {
    const problems = err.data.problems;
    return { exitCode: 1, message, json: { error: message, code: err.code, problems }, details: problems, unexpected: false };
  }
  if (isKnowledgeError(err)) return { exitCode: 1, message, json: { error: message, code: err.code }, details: [], unexpected: false };
  if (err instanceof ConfigError) return { exitCode: 1, message, json: { error: message, code: 'CONFIG_ERROR' }, details: [], unexpected: false };
  return { exitCode: 1, message, json: { error: message, code: 'FAILED' }, details: [], unexpected: true };
}
