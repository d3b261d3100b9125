import type { Command } from 'commander';
import type { KnowledgeItem } from '../http/presenters.js';
import { ApiError, UsageError } from './errors.js';
import { client, readText, withTarget, type Target } from './itemTarget.js';
import { print } from './output.js';

/**
 * `knowledge-store item mv|commit|revert`: the structural writes of a running server (README, Several changes in
 * one commit; Moving an item; Undoing changes), as `POST /move`, `POST /commits` and `POST /revert`. What the
 * server checks (paths, permissions, scopes, ETags, one change per path) it refuses with its own message, so
 * nothing of it is checked twice here: only what is not a request at all (no JSON, no operations, both forms
 * of a revert) is a usage error.
 */

/** One entry of `POST /commits`'s `items`, as the API answers it (README, Several changes in one commit). */
type CommitItem =
  | { op: 'put'; item: KnowledgeItem; etag: string; changed: boolean }
  | { op: 'move'; item: KnowledgeItem; etag: string }
  | { op: 'delete'; path: string; deleted: true };

interface RevertConflictView {
  path: string;
  why: string;
  current: { version: number; etag: string } | null;
}

interface RevertAnswer {
  commitId: string | null;
  reverted: string[];
  conflicts: RevertConflictView[];
}

type Operation = Record<string, unknown>;

export function addStructuralCommands(item: Command): void {
  withTarget(item.command('mv <from> <to>').description('move an item to another path, with its id and its history (one commit)'))
    .option('-m, --message <message>', 'the commit message')
    .option('--if-match <etag>', 'only if the item still has this ETag (as `item get --json` shows it)')
    .action(async (from: string, to: string, opts: Target & { message?: string; ifMatch?: string }) => {
      const { data, etag } = await client(opts).call<{ item: KnowledgeItem }>({
        method: 'POST',
        path: '/move',
        body: { from, to, ...(opts.ifMatch !== undefined ? { ifMatch: opts.ifMatch } : {}), ...(opts.message !== undefined ? { message: opts.message } : {}) },
      });
      const { content: _content, ...rest } = data.item;
      print(opts, `Moved ${from} to ${data.item.path} (ETag ${etag ?? 'none'})`, { ...rest, etag });
    });

  withTarget(item.command('commit').description('apply several puts, moves and deletes as one commit, all or nothing, from --file or stdin (JSON)'))
    .option('--file <file>', 'the operations: a JSON array, or {"message", "operations"} (default: stdin)')
    .option('-m, --message <message>', 'the commit message (over the one in the file)')
    .action(async (opts: Target & { file?: string; message?: string }) => {
      const source = opts.file && opts.file !== '-' ? opts.file : 'stdin';
      const text = await readText(opts.file, 'the operations');
      const { operations, message } = parseOperations(text, source);
      const api = client(opts);
      let answer: { commitId: string | null; items: CommitItem[] };
      try {
        ({ data: answer } = await api.call<typeof answer>({
          method: 'POST',
          path: '/commits',
          body: { operations, ...((opts.message ?? message) !== undefined ? { message: opts.message ?? message } : {}) },
        }));
      } catch (err) {
        // The server names the operation by its index: say which one it is, as the file has it.
        const at = err instanceof ApiError ? err.data.failedOperation : undefined;
        if (err instanceof ApiError && at !== undefined) {
          throw new ApiError({ ...err.data, message: `${err.message} (operation ${at}: ${describe(operations[at])}; nothing was changed)` });
        }
        throw err;
      }
      const lines = answer.items.map((entry) => {
        if (entry.op === 'put') return `put\t${entry.item.path}\t${entry.changed ? 'changed' : 'unchanged'}`;
        if (entry.op === 'move') return `move\t${entry.item.path}`;
        return `delete\t${entry.path}`;
      });
      const head = answer.commitId === null ? 'Nothing changed (no commit)' : `Committed ${answer.commitId} (${operations.length} operation${operations.length === 1 ? '' : 's'})`;
      print(opts, [head, ...lines].join('\n'), answer);
    });

  withTarget(
    item
      .command('revert [commit]')
      .description("undo one commit, or every change one key made since a time (--by, --since), as one new commit (admin keys); items changed since by others are left alone and listed")
      .option('--by <keyId>', 'undo the changes of this key (its id: `key list`, or GET /api/v1/knowledge/keys)')
      .option('--since <time>', 'with --by: the changes after this ISO 8601 time, e.g. 2026-12-01T09:00:00Z')
      .option('--force', 'overwrite the conflicts too (items changed since by others)'),
  ).action(async (commit: string | undefined, opts: Target & { by?: string; since?: string; force?: boolean }) => {
    const byKey = opts.by !== undefined || opts.since !== undefined;
    if (commit !== undefined && byKey) throw new UsageError('give either a commit, or --by and --since, not both');
    if (commit === undefined && !byKey) throw new UsageError('give the commit to revert, or --by <keyId> and --since <time>');
    if (byKey && (opts.by === undefined || opts.since === undefined)) throw new UsageError('--by and --since go together');
    const target = commit !== undefined ? { commitId: commit } : { keyId: opts.by, since: opts.since };
    const { data } = await client(opts).call<RevertAnswer>({ method: 'POST', path: '/revert', body: { ...target, ...(opts.force ? { force: true } : {}) } });
    const head = data.commitId === null ? 'Nothing reverted (no commit)' : `Reverted ${data.reverted.length} item${data.reverted.length === 1 ? '' : 's'} in ${data.commitId}`;
    const lines = [
      ...data.reverted.map((path) => `reverted\t${path}`),
      ...data.conflicts.map((c) => `conflict\t${c.path}\t${c.why}`),
      ...(data.conflicts.length > 0 && !opts.force ? [`Left alone: ${data.conflicts.length} conflict${data.conflicts.length === 1 ? '' : 's'} (--force to overwrite them)`] : []),
    ];
    print(opts, [head, ...lines].join('\n'), data);
  });
}

/** The operations of `item commit`'s input: a JSON array of them, or an object with `operations` (and `message`). */
function parseOperations(text: string, source: string): { operations: Operation[]; message?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source} is not JSON: ${(err as Error).message.replace(/\s+/g, ' ')}`);
  }
  const envelope = Array.isArray(value) ? { operations: value } : value;
  if (typeof envelope !== 'object' || envelope === null || !Array.isArray((envelope as { operations?: unknown }).operations)) {
    throw new UsageError(`${source} must hold a JSON array of operations, or an object with "operations" (README, Several changes in one commit)`);
  }
  const { operations, message } = envelope as { operations: unknown[]; message?: unknown };
  if (operations.length === 0) throw new UsageError(`${source} holds no operation`);
  if (operations.some((op) => typeof op !== 'object' || op === null || Array.isArray(op))) throw new UsageError(`each operation in ${source} must be a JSON object, e.g. {"op": "put", "path": "a.md", "content": "…"}`);
  if (message !== undefined && typeof message !== 'string') throw new UsageError(`"message" in ${source} must be a string`);
  return { operations: operations as Operation[], ...(message !== undefined ? { message } : {}) };
}

/** An operation as a refusal names it: `put docs/a.md`, `move a.md → b.md`. */
function describe(op: Operation | undefined): string {
  if (!op) return 'not in the file';
  const text = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
  if (op.op === 'move') return `move ${text(op.from)} → ${text(op.to)}`;
  return `${text(op.op)} ${text(op.path)}`;
}
