import { systemClock, type Clock } from '../common/clock.js';
import { isKnowledgeError } from '../common/errors.js';
import { versionTag, type IndexEntry } from '../storage/repo/itemIndex.js';
import type { ItemIntent, OrgRepo } from '../storage/repo/orgRepo.js';
import { requireRole } from './access.js';
import { InvalidInput, OperationFailed } from './errors.js';
import { authorOf, checkDelete, checkPut, planDelete, planPut, validateMessage, type CheckedPut, type TagCondition } from './items.js';
import { type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { checkMove, planMove, type CheckedMove } from './moves.js';

/** Operations one `POST /commits` may carry. */
const MAX_OPERATIONS = 1000;

/** One operation as asked for (ETag conditions already parsed). */
export type Operation =
  | {
      op: 'put';
      path: string;
      content: string;
      ifMatch?: TagCondition;
      requiredReadPermission?: string;
      requiredWritePermission?: string;
    }
  | { op: 'delete'; path: string }
  | { op: 'move'; from: string; to: string; ifMatch?: TagCondition };

/**
 * What each operation did, in order: a put or move the item as it left it (without content: the
 * client sent it), a delete the path it emptied. A put that changed nothing says so.
 */
export type OperationResult =
  | { op: 'put'; item: ItemView; changed: boolean }
  | { op: 'move'; item: ItemView }
  | { op: 'delete'; path: string; deleted: true };

type Checked = { op: 'put'; put: CheckedPut } | { op: 'move'; move: CheckedMove } | { op: 'delete'; path: string };

/**
 * `POST /commits`: applies 1–1000 operations all-or-nothing as one commit, through the same write
 * queue (and group commit) as a PUT. Each operation is checked and decided by the same functions as
 * its single-item route (`checkPut`/`planPut`, `checkMove`/`planMove`, `checkDelete`/`planDelete`)
 * and sees the effect of the ones before it. A refusal is `OperationFailed` with the operation's
 * index and the single route's own error; nothing is written then. Nothing changed: no commit.
 */
export async function commitOperations(args: {
  repo: OrgRepo;
  actor: Actor;
  message?: string;
  operations: readonly Operation[];
  maxContentBytes: number;
  clock?: Clock;
}): Promise<{ commitId: string | null; items: OperationResult[] }> {
  const { repo, actor, operations, maxContentBytes, clock = systemClock } = args;
  requireRole(actor, 'knowledge:write');
  if (operations.length < 1 || operations.length > MAX_OPERATIONS) {
    throw new InvalidInput({ reason: `operations must hold 1 to ${MAX_OPERATIONS} operations` });
  }
  const message = args.message === undefined ? undefined : validateMessage(args.message);
  const checked = operations.map((operation, index) => atIndex(index, () => check(actor, operation, maxContentBytes)));
  checkPathsOnce(checked);

  /** Per operation: the index of its intent in the commit, or the item a put left as it was. */
  const outcome: Array<{ intent: number } | { unchanged: IndexEntry }> = [];
  const result = await repo.write((v) => {
    const scratch = v.scratch();
    const intents: ItemIntent[] = [];
    const when = clock();
    checked.forEach((c, index) => {
      const intent = atIndex(index, (): ItemIntent | IndexEntry => {
        if (c.op === 'delete') return planDelete(scratch, actor, c.path, when);
        if (c.op === 'move') return planMove(scratch, actor, c.move, when);
        const plan = planPut(scratch, actor, c.put, when);
        return plan.intent ?? plan.unchanged;
      });
      if ('mutation' in intent) {
        scratch.apply(intent);
        outcome.push({ intent: intents.length });
        intents.push(intent);
      } else outcome.push({ unchanged: intent });
    });
    if (intents.length === 0) return null;
    const summary = message ?? defaultSummary(intents);
    return { mutation: 'commit', items: intents, summary, author: authorOf(actor), when };
  });

  const items = checked.map((c, index): OperationResult => {
    if (c.op === 'delete') return { op: 'delete', path: c.path, deleted: true };
    const o = outcome[index];
    const changed = o !== undefined && 'intent' in o;
    const entry = changed ? result.entries?.[o.intent] : o?.unchanged;
    if (!entry) throw new Error(`operation ${index} finished without an entry`);
    const item: ItemView = { record: entry.record, etag: versionTag(entry) };
    return c.op === 'move' ? { op: 'move', item } : { op: 'put', item, changed };
  });
  return { commitId: result.commitId, items };
}

function check(actor: Actor, operation: Operation, maxContentBytes: number): Checked {
  switch (operation.op) {
    case 'put':
      return { op: 'put', put: checkPut(actor, { ...operation, maxContentBytes }) };
    case 'move':
      return { op: 'move', move: checkMove(actor, operation) };
    case 'delete':
      return { op: 'delete', path: checkDelete(actor, operation.path) };
  }
}

/** Runs one operation's step; a refusal of ours becomes that operation's refusal. */
function atIndex<T>(index: number, step: () => T): T {
  try {
    return step();
  } catch (cause) {
    if (isKnowledgeError(cause)) throw new OperationFailed({ index, cause });
    throw cause;
  }
}

/**
 * Each path is changed by one operation, with one exception: a move may take on an item where an
 * earlier operation left it (a put of it, or a move to it), so "create, then move" or "move, then move
 * on" works. Anything else changing a path twice (two puts, a put then a delete, a move onto a path
 * another operation changed) is ambiguous: refused, naming both operations.
 */
function checkPathsOnce(checked: readonly Checked[]): void {
  const byPath = new Map<string, { index: number; chainable: boolean }>();
  checked.forEach((c, index) => {
    const claim = (path: string, chainable: boolean): void => {
      const earlier = byPath.get(path);
      if (earlier) {
        const reason = `operations ${earlier.index} and ${index} both change "${path}": put each path once per commit, or move it after a put`;
        throw new OperationFailed({ index, cause: new InvalidInput({ reason }) });
      }
      byPath.set(path, { index, chainable });
    };
    if (c.op === 'put') claim(c.put.path, true);
    else if (c.op === 'delete') claim(c.path, false);
    else {
      const earlier = byPath.get(c.move.from);
      // Taking on the item an earlier operation left at `from`: the path is left for good.
      if (earlier?.chainable) byPath.set(c.move.from, { index, chainable: false });
      else claim(c.move.from, false);
      claim(c.move.to, true);
    }
  });
}

/** The commit's first line when the client gave no message: what it did, in a few words. */
function defaultSummary(intents: readonly ItemIntent[]): string {
  if (intents.length === 1) return (intents[0] as ItemIntent).summary;
  const counts = new Map<string, number>();
  for (const i of intents) {
    const verb = i.action === 'create' ? 'create' : i.action === 'delete' ? 'delete' : i.action === 'move' ? 'move' : 'update';
    counts.set(verb, (counts.get(verb) ?? 0) + 1);
  }
  const parts = [...counts].map(([verb, n]) => `${verb} ${n}`);
  const text = parts.join(', ');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)} (${intents.length} changes in one commit)`;
}
