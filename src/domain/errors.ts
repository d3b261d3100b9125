import { KnowledgeError } from '../common/errors.js';
import type { Permission } from './permissions.js';

/** The item is absent, soft-deleted, or hidden from the caller's role. */
export class ItemNotFound extends KnowledgeError<{ path: string }> {
  constructor(data: { path: string }) {
    super('ITEM_NOT_FOUND', `No item at ${data.path}`, data);
  }
}

/** A soft-deleted item occupies the path: a create there is refused until it is restored or purged. */
export class ItemInTrash extends KnowledgeError<{ path: string }> {
  constructor(data: { path: string }) {
    super('ITEM_IN_TRASH', `A deleted item occupies ${data.path}`, data);
  }
}

/** An item where a folder is needed, or a folder where an item is needed. */
export class PathConflict extends KnowledgeError<{ path: string; conflictsWith: string; reason: string }> {
  constructor(data: { path: string; conflictsWith: string; reason: string }) {
    super('PATH_CONFLICT', data.reason, data);
  }
}

export class InvalidPath extends KnowledgeError<{ path: string; rule: string }> {
  constructor(data: { path: string; rule: string }) {
    super('INVALID_PATH', `Invalid path: ${data.rule}`, data);
  }
}

export class Forbidden extends KnowledgeError<{ permission: Permission }> {
  constructor(data: { permission: Permission }) {
    super('FORBIDDEN', `Forbidden — requires ${data.permission} permission`, data);
  }
}

/**
 * A scoped key asked for what lies outside its folders (a write there, a folder rule there), or for
 * what reaches the whole organization (a clone, key management). Decided without looking at what is stored.
 */
export class ScopeRefused extends KnowledgeError<{ reason: string }> {
  constructor(data: { reason: string }) {
    super('SCOPE_REFUSED', `Forbidden — ${data.reason}`, data);
  }
}

export class PreconditionFailed extends KnowledgeError<{ path: string; reason: 'changed' | 'exists' }> {
  constructor(data: { path: string; reason: 'changed' | 'exists' }) {
    super('PRECONDITION_FAILED', `Precondition failed for ${data.path}: ${data.reason}`, data);
  }
}

export class ContentTooLarge extends KnowledgeError<{ bytes: number; limit: number }> {
  constructor(data: { bytes: number; limit: number }) {
    super('CONTENT_TOO_LARGE', `Content is ${data.bytes} bytes; the limit is ${data.limit}`, data);
  }
}

/** Bad input that is not a path: a field, a query parameter, an id. */
export class InvalidInput extends KnowledgeError<{ reason: string }> {
  constructor(data: { reason: string }) {
    super('INVALID_INPUT', data.reason, data);
  }
}

export class OrgNotFound extends KnowledgeError<{ orgId: string }> {
  constructor(data: { orgId: string }) {
    super('ORG_NOT_FOUND', `Organization "${data.orgId}" does not exist`, data);
  }
}

export class KeyNotFound extends KnowledgeError<{ keyId: string }> {
  constructor(data: { keyId: string }) {
    super('KEY_NOT_FOUND', `No API key with id ${data.keyId}`, data);
  }
}

export class VersionNotFound extends KnowledgeError<{ path: string; version: number }> {
  constructor(data: { path: string; version: number }) {
    super('VERSION_NOT_FOUND', `${data.path} has no version ${data.version}`, data);
  }
}

/** The server keeps no search index (KNOWLEDGE_SEARCH=off). */
export class SearchOff extends KnowledgeError<{ orgId: string }> {
  constructor(data: { orgId: string }) {
    super('SEARCH_OFF', 'search is turned off on this server', data);
  }
}

/**
 * One operation of `POST /commits` was refused (and so nothing was written): the refusal itself,
 * answered as the single-item route would answer it, and the operation's index.
 */
export class OperationFailed extends KnowledgeError<{ index: number; cause: KnowledgeError }> {
  constructor(data: { index: number; cause: KnowledgeError }) {
    super('OPERATION_FAILED', `operation ${data.index}: ${data.cause.message}`, data);
  }
}

/** A JSON write on a file item's path, or a file upload on a text item's: an item keeps its kind (contract §8). */
export class ItemKindConflict extends KnowledgeError<{ path: string; itemType: 'text' | 'file' }> {
  constructor(data: { path: string; itemType: 'text' | 'file' }) {
    super('ITEM_KIND_CONFLICT', `Path holds a ${data.itemType} item`, data);
  }
}

/** An upload of a type the store does not take, or whose bytes are of another type than declared. */
export class UnsupportedFileType extends KnowledgeError<{ type: string }> {
  constructor(data: { type: string }) {
    super('UNSUPPORTED_FILE_TYPE', `Unsupported file type: ${data.type}`, data);
  }
}

/** The upload's text could not be extracted (corrupt, encrypted, over the time or memory limit). */
export class ExtractionFailed extends KnowledgeError<{ reason: string }> {
  constructor(data: { reason: string }) {
    super('EXTRACTION_FAILED', `Could not extract text: ${data.reason}`, data);
  }
}

export class WebhookNotFound extends KnowledgeError<{ webhookId: string }> {
  constructor(data: { webhookId: string }) {
    super('WEBHOOK_NOT_FOUND', `No webhook ${data.webhookId}`, data);
  }
}
