import { fileTypeFromBuffer } from 'file-type';
import { systemClock, type Clock } from '../common/clock.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { canSee, readable, requireRole } from './access.js';
import { ContentTooLarge, ItemInTrash, ItemKindConflict, ItemNotFound } from './errors.js';
import { writeFilePut, type FilePut } from './fileWrites.js';
import { resolveFileType, validateFileName, type FileKind } from './fileTypes.js';
import { getItemVersion } from './history.js';
import { pathTaken, requireChangeRights, validateMessage, type TagCondition } from './items.js';
import { view, type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { validatePath } from './paths.js';
import { requireInScope } from './scopes.js';

/**
 * Gets the text out of a file, off the event loop and within a time and memory limit (src/extract/);
 * it names the bytes' git blob too, since it holds them where hashing costs the server nothing.
 * Throws `ExtractionFailed` for a file whose text cannot be had.
 */
export interface TextExtractor {
  extract(args: { bytes: Uint8Array; kind: FileKind }): Promise<{ text: string; blobOid: string }>;
}

/** An upload as the HTTP layer received it. */
export interface FileUpload {
  path: string;
  bytes: Buffer;
  /** The declared MIME type (Content-Type, or the multipart part's). */
  contentType: string;
  /** The original name (X-File-Name, or the multipart part's); the path's last segment when absent. */
  fileName?: string;
  message?: string;
  ifMatch?: TagCondition;
  ifNoneMatch?: TagCondition;
  maxFileBytes: number;
}

/**
 * `PUT /files/{path}`: creates or updates a file item in one commit. Every check that needs no
 * extraction comes first (role, path, size, type, the item there), so a refused upload never
 * costs an extraction; all of them are decided again in the write queue.
 */
export async function putFile(
  input: FileUpload & { repo: OrgRepo; actor: Actor; extractor: TextExtractor; clock?: Clock },
): Promise<{ item: ItemView; created: boolean; commitId: string | null }> {
  const { repo, actor, bytes, clock = systemClock } = input;
  requireRole(actor, 'knowledge:write');
  const path = validatePath(input.path);
  // Outside the key's scopes: refused on the path alone, as a JSON PUT is, before anything there is looked at
  // (a 409 for a taken path would tell a scoped key what exists outside) or any extraction is spent.
  requireInScope(actor, path);
  if (bytes.byteLength > input.maxFileBytes) throw new ContentTooLarge({ bytes: bytes.byteLength, limit: input.maxFileBytes });
  const message = input.message === undefined ? undefined : validateMessage(input.message);
  const fileName = validateFileName(input.fileName ?? path.slice(path.lastIndexOf('/') + 1));
  const detected = (await fileTypeFromBuffer(bytes))?.mime;
  const type = resolveFileType({ declared: input.contentType, detected, path });
  checkExisting(repo, actor, path);
  const { text, blobOid } = await input.extractor.extract({ bytes, kind: type.kind });
  // The bytes go in before the commit is queued (outside the write queue, off the event loop); a
  // put refused in the queue leaves them as a dangling blob, which no tree names.
  await repo.storeFile(bytes, blobOid);
  const put: FilePut = { path, text, fileKey: blobOid, fileName, contentType: type.mime, fileSize: bytes.byteLength, message, ifMatch: input.ifMatch, ifNoneMatch: input.ifNoneMatch };
  return writeFilePut(repo, actor, put, clock);
}

/**
 * `GET /files/{path}` (`?version=n`): the item, read through the same checks as the item's GET, and how to
 * read its original bytes. The bytes are read only when asked: a conditional GET answered 304 reads none,
 * and the route reads them once it holds room for them in memory.
 */
export async function getFile(args: { repo: OrgRepo; actor: Actor; path: string; version?: number }): Promise<{ item: ItemView; size: number; readBytes: () => Promise<Buffer> }> {
  const { repo, actor, path, version } = args;
  const item = version === undefined ? await fileView(repo, actor, path) : await getItemVersion({ repo, actor, path, version });
  const { fileKey, fileSize } = item.record;
  if (item.record.itemType !== 'file' || fileKey === null) throw new ItemKindConflict({ path: item.record.path, itemType: 'text' });
  return { item, size: fileSize ?? 0, readBytes: () => repo.readFile(fileKey) };
}

/** The live item at `path` without its text (a download needs only the record). */
async function fileView(repo: OrgRepo, actor: Actor, rawPath: string): Promise<ItemView> {
  requireRole(actor, 'knowledge:read');
  const path = validatePath(rawPath);
  const entry = repo.get(path);
  if (!readable(actor, entry, repo)) throw new ItemNotFound({ path });
  return view(repo, entry, false);
}

/** The refusals a PUT would get from the item now at `path`, before any extraction is spent on it. */
function checkExisting(repo: OrgRepo, actor: Actor, path: string): void {
  const current = repo.get(path);
  if (!current) return;
  if (!canSee(actor, current.record, repo)) throw pathTaken(path);
  if (current.record.deletedAt !== null) throw new ItemInTrash({ path });
  if (current.record.itemType !== 'file') throw new ItemKindConflict({ path, itemType: 'text' });
  requireChangeRights(actor, current.record, repo);
}

