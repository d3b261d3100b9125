import { editItem } from '../../domain/edits.js';
import { rollback as rollbackItem } from '../../domain/history.js';
import { deleteItem, putItem } from '../../domain/items.js';
import { moveItem } from '../../domain/moves.js';
import { restoreItem } from '../../domain/trash.js';
import { etagConditionField, presentItem } from '../presenters.js';
import { arguments_, IF_MATCH, MESSAGE, PATH, VERSION } from './schemas.js';
import { tool, type Tool } from './tool.js';

const ifMatch = (value: string | undefined): string[] | '*' | undefined => etagConditionField(value, 'if_match');

export const write = tool<{ path: string; content: string; if_match?: string; message?: string }>({
  name: 'write',
  description: [
    'Creates an item, or replaces the whole content of an existing one (every change is a commit; history keeps the old version).',
    'To change part of an item, prefer `edit`. When replacing an item you read, pass its etag as `if_match`: the write is refused if someone changed it since.',
    'Needs a writer or admin key.',
  ].join(' '),
  inputSchema: arguments_(
    { path: { ...PATH, description: `${PATH.description} Folders are created as needed.` }, content: { type: 'string', description: 'The whole new content (markdown, JSON or text).' }, if_match: IF_MATCH, message: MESSAGE },
    ['path', 'content'],
  ),
  annotations: { title: 'Write an item', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  run: async (args, ctx) => {
    const { item, created, commitId } = await putItem({
      repo: ctx.repo,
      actor: ctx.actor,
      path: args.path,
      content: args.content,
      message: args.message,
      ifMatch: ifMatch(args.if_match),
      maxContentBytes: ctx.maxContentBytes,
      clock: ctx.clock,
    });
    return { item: presentItem(ctx.actor.orgId, { record: item.record }), etag: item.etag, created, commitId };
  },
});

export const edit = tool<{ path: string; old_text: string; new_text: string; if_match?: string; message?: string }>({
  name: 'edit',
  description: [
    'Replaces one passage of an item: `old_text` must occur exactly once in its content (copy it exactly, whitespace included, with enough surrounding text to be unique); it becomes `new_text`.',
    'If old_text is not found, or found more than once, nothing changes and the error says how many times it was found.',
    'Needs a writer or admin key.',
  ].join(' '),
  inputSchema: arguments_(
    {
      path: PATH,
      old_text: { type: 'string', minLength: 1, description: 'The exact text to replace; it must occur exactly once in the item.' },
      new_text: { type: 'string', description: 'What replaces it (may be empty, to delete the passage).' },
      if_match: IF_MATCH,
      message: MESSAGE,
    },
    ['path', 'old_text', 'new_text'],
  ),
  annotations: { title: 'Edit part of an item', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: async (args, ctx) => {
    const { item, commitId } = await editItem({
      repo: ctx.repo,
      actor: ctx.actor,
      path: args.path,
      oldText: args.old_text,
      newText: args.new_text,
      ifMatch: ifMatch(args.if_match),
      message: args.message,
      maxContentBytes: ctx.maxContentBytes,
      clock: ctx.clock,
    });
    return { item: presentItem(ctx.actor.orgId, { record: item.record }), etag: item.etag, commitId };
  },
});

export const move = tool<{ from: string; to: string; if_match?: string; message?: string }>({
  name: 'move',
  description: [
    'Moves (renames) an item to a new path, keeping its id, its history and its content; one commit, which git sees as a rename.',
    'Refused, with nothing changed, when `to` is taken (by an item or a folder of items) or when the role could not write the item at either place.',
    'Needs a writer or admin key.',
  ].join(' '),
  inputSchema: arguments_({ from: { ...PATH, description: 'The item\'s current path.' }, to: { ...PATH, description: 'Its new path (folders are created as needed).' }, if_match: IF_MATCH, message: MESSAGE }, ['from', 'to']),
  annotations: { title: 'Move an item', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: async (args, ctx) => {
    const { item, commitId } = await moveItem({ repo: ctx.repo, actor: ctx.actor, from: args.from, to: args.to, ifMatch: ifMatch(args.if_match), message: args.message, clock: ctx.clock });
    return { item: presentItem(ctx.actor.orgId, { record: item.record }), etag: item.etag, commitId };
  },
});

export const remove = tool<{ path: string }>({
  name: 'delete',
  description: 'Moves an item to the trash (an admin can `restore` it; its history stays). Needs an admin key.',
  inputSchema: arguments_({ path: PATH }, ['path']),
  annotations: { title: 'Delete an item', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  run: async (args, ctx) => {
    const { commitId } = await deleteItem({ repo: ctx.repo, actor: ctx.actor, path: args.path, clock: ctx.clock });
    return { message: 'Knowledge item deleted', path: args.path, commitId };
  },
});

export const restore = tool<{ path: string }>({
  name: 'restore',
  description: 'Brings a deleted item back from the trash at its path, with its id and history. Needs an admin key.',
  inputSchema: arguments_({ path: PATH }, ['path']),
  annotations: { title: 'Restore from the trash', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: async (args, ctx) => {
    const item = await restoreItem({ repo: ctx.repo, actor: ctx.actor, path: args.path, clock: ctx.clock });
    return { item: presentItem(ctx.actor.orgId, { record: item.record }), etag: item.etag };
  },
});

export const rollback = tool<{ path: string; version: number }>({
  name: 'rollback',
  description:
    'Makes an earlier version of an item its current content again, as a new commit (history is never rewritten: the rollback itself can be undone). Find the version with `history`. Needs a writer or admin key.',
  inputSchema: arguments_({ path: PATH, version: VERSION }, ['path', 'version']),
  annotations: { title: 'Roll back to a version', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  run: async (args, ctx) => {
    const { item, commitId } = await rollbackItem({ ...args, repo: ctx.repo, actor: ctx.actor, maxContentBytes: ctx.maxContentBytes, clock: ctx.clock });
    return { item: presentItem(ctx.actor.orgId, { record: item.record }), etag: item.etag, commitId };
  },
});

export const WRITE_TOOLS: readonly Tool[] = [write, edit, move, remove, restore, rollback];
