import type { Clock } from '../common/clock.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { requireRole } from './access.js';
import { InvalidInput, PreconditionFailed } from './errors.js';
import { putItem, tagMatches, type TagCondition } from './items.js';
import { getItem, type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';

/**
 * Where `needle` starts in `text`, overlapping matches included ("aa" is twice in "aaa": which one is
 * meant is unclear), up to `atMost` of them: a refusal needs only the count, not every position.
 */
function occurrences(text: string, needle: string, atMost: number): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1 && found.length < atMost; at = text.indexOf(needle, at + 1)) found.push(at);
  return found;
}

/** How many occurrences an error reports exactly; beyond, "more than" this. */
const COUNTED = 100;

/**
 * Replaces exactly one occurrence of `oldText` in the item's content with `newText`:
 * the edit an agent makes without resending a whole document. Text found twice is
 * refused (the agent must say which one, with more context), as is text not found.
 * The write is conditional on the version read here, so a change made in between by
 * someone else is a 412, never silently overwritten; the rest is a PUT's checks.
 */
export async function editItem(args: {
  repo: OrgRepo;
  actor: Actor;
  path: string;
  oldText: string;
  newText: string;
  ifMatch?: TagCondition;
  message?: string;
  maxContentBytes: number;
  clock?: Clock;
}): Promise<{ item: ItemView; commitId: string | null }> {
  const { repo, actor, oldText, newText } = args;
  requireRole(actor, 'knowledge:write');
  if (oldText.length === 0) throw new InvalidInput({ reason: 'the text to replace must not be empty' });
  const current = await getItem({ repo, actor, path: args.path });
  const path = current.record.path;
  if (args.ifMatch !== undefined && !tagMatches(args.ifMatch, current.etag)) throw new PreconditionFailed({ path, reason: 'changed' });
  const content = current.content ?? '';
  const found = occurrences(content, oldText, COUNTED + 1);
  if (found.length === 0) throw new InvalidInput({ reason: `the text to replace was not found in ${path}` });
  if (found.length > 1) {
    const times = found.length > COUNTED ? `more than ${COUNTED}` : String(found.length);
    throw new InvalidInput({
      reason: `the text to replace occurs ${times} times in ${path}; include more of the surrounding text so that it occurs exactly once`,
    });
  }
  const at = found[0] as number;
  return putItem({
    repo,
    actor,
    path,
    content: content.slice(0, at) + newText + content.slice(at + oldText.length),
    message: args.message ?? `Edit ${path}`,
    ifMatch: [current.etag],
    maxContentBytes: args.maxContentBytes,
    clock: args.clock,
  });
}
