import type { ItemRecord } from '../../src/storage/repo/itemRecord.js';
import type { RepoView, WriteIntent } from '../../src/storage/repo/orgRepo.js';
import { textRecord } from './records.js';

/** Write intents as the domain builds them, for storage tests that drive OrgRepo.write by hand. */

export const INTENT_AUTHOR = { name: 'ci bot', email: 'key_0123456789abcdef' };

const record = (path: string, extra: Partial<ItemRecord> = {}): ItemRecord =>
  textRecord(path, { createdBy: INTENT_AUTHOR.email, updatedBy: INTENT_AUTHOR.email, ...extra });

/** A put of new content: a create when the view has no item, an update otherwise. */
export function putIntent(view: RepoView, path: string, content: string, when = new Date('2024-03-01T10:00:00.750Z')): WriteIntent {
  const current = view.get(path);
  return {
    mutation: 'put',
    path,
    record: current ? { ...current.record, updatedAt: when.toISOString() } : record(path),
    content,
    action: current ? 'update' : 'create',
    summary: current ? `Update ${path}` : `Create ${path}`,
    author: INTENT_AUTHOR,
    when,
  };
}

export function moveIntent(view: RepoView, path: string, mutation: 'trash' | 'restore' | 'purge'): WriteIntent {
  const current = view.get(path);
  if (!current) throw new Error(`test setup: nothing at ${path}`);
  const when = new Date('2024-03-02T00:00:00Z');
  const deleted = mutation === 'trash';
  return {
    mutation,
    path,
    record: { ...current.record, deletedAt: deleted ? when.toISOString() : null, deletedBy: deleted ? INTENT_AUTHOR.email : null },
    action: mutation === 'trash' ? 'delete' : mutation,
    summary: `${mutation} ${path}`,
    author: INTENT_AUTHOR,
    when,
  };
}

/** A move of the live item at `from` to `to`, as the domain builds it. */
export function moveToIntent(view: RepoView, from: string, to: string, when = new Date('2024-03-03T12:00:00Z')): WriteIntent {
  const current = view.get(from);
  if (!current) throw new Error(`test setup: nothing at ${from}`);
  return {
    mutation: 'move',
    from,
    path: to,
    record: { ...current.record, path: to, updatedAt: when.toISOString() },
    action: 'move',
    summary: `Move ${from} to ${to}`,
    author: INTENT_AUTHOR,
    when,
  };
}
