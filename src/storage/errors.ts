import { KnowledgeError } from '../common/errors.js';

/** A lock file stayed held past the wait limit (another writer, or a stuck process). */
export class LockTimeout extends KnowledgeError<{ lockPath: string; waitedMs: number }> {
  constructor(data: { lockPath: string; waitedMs: number }) {
    super('LOCK_TIMEOUT', `Timed out after ${data.waitedMs} ms waiting for ${data.lockPath}`, data);
  }
}

/** The branch moved under us: someone other than this process wrote to the repository. */
export class RefConflict extends KnowledgeError<{ ref: string; expected: string | null; actual: string | null }> {
  constructor(data: { ref: string; expected: string | null; actual: string | null }) {
    super('REF_CONFLICT', `${data.ref} is at ${data.actual ?? 'nothing'}, expected ${data.expected ?? 'nothing'}`, data);
  }
}

/** Another server already serves this data directory. */
export class DataDirInUse extends KnowledgeError<{ dataDir: string; pid: number }> {
  constructor(data: { dataDir: string; pid: number }) {
    super('DATA_DIR_IN_USE', `Data directory ${data.dataDir} is in use by another knowledge-store server (pid ${data.pid})`, data);
  }
}

/** The repository or the key file holds something this version cannot read. */
export class CorruptStore extends KnowledgeError<{ where: string; reason: string }> {
  constructor(data: { where: string; reason: string }) {
    super('CORRUPT_STORE', `${data.where}: ${data.reason}`, data);
  }
}

export class OrgAlreadyExists extends KnowledgeError<{ orgId: string }> {
  constructor(data: { orgId: string }) {
    super('ORG_EXISTS', `Organization "${data.orgId}" already exists`, data);
  }
}
