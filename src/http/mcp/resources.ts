import { getItem, selectItems } from '../../domain/itemReads.js';
import { InvalidInput } from '../../domain/errors.js';
import type { ToolContext } from './tool.js';

/** Items listed per resources/list page. */
const RESOURCE_PAGE = 100;

const SCHEME = 'knowledge:///';

export const RESOURCE_TEMPLATE = {
  uriTemplate: `${SCHEME}{+path}`,
  name: 'knowledge-item',
  title: 'Knowledge item',
  description: 'A knowledge item by its path, e.g. knowledge:///docs/setup.md',
};

/** `knowledge:///docs/a%20b.md`: each path segment percent-encoded, so any path is a valid URI. */
export function resourceUri(path: string): string {
  return SCHEME + path.split('/').map(encodeURIComponent).join('/');
}

function pathOf(uri: string): string {
  if (!uri.startsWith(SCHEME)) throw new InvalidInput({ reason: `A resource URI must start with ${SCHEME}` });
  try {
    return decodeURIComponent(uri.slice(SCHEME.length));
  } catch {
    throw new InvalidInput({ reason: 'malformed percent-encoding in the resource URI' });
  }
}

/** What the content is, for a client that renders it: by the path's extension, text otherwise. */
function mimeTypeOf(path: string): string {
  if (/\.(md|markdown)$/i.test(path)) return 'text/markdown';
  if (/\.json$/i.test(path)) return 'application/json';
  return 'text/plain';
}

/** The items the key may read, a page at a time, in path order (the list route's paging). */
export async function listResources(ctx: ToolContext, cursor: string | undefined) {
  const { actor, repo } = ctx;
  const { entries, nextCursor } = selectItems({ repo, actor, limit: RESOURCE_PAGE, cursor });
  const resources = entries.map(({ record: { path } }) => ({ uri: resourceUri(path), name: path, mimeType: mimeTypeOf(path) }));
  return nextCursor ? { resources, nextCursor } : { resources };
}

export async function readResource(ctx: ToolContext, uri: string) {
  const item = await getItem({ repo: ctx.repo, actor: ctx.actor, path: pathOf(uri) });
  return { contents: [{ uri, mimeType: mimeTypeOf(item.record.path), text: item.content ?? '' }] };
}
