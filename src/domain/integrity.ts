import type { StoreRules } from '../storage/repo/verify.js';
import { validateFolderPrefix, validatePath } from './paths.js';
import { READ_REQUIREMENTS, WRITE_REQUIREMENTS } from './permissions.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

const problemOf = (check: () => unknown): string | undefined => {
  try {
    check();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
};

/**
 * What a knowledge repository may hold, by the domain's rules: what `verify`
 * checks beyond git's own fsck, and what `org import` demands of a repository
 * that may come from anywhere.
 */
export const STORE_RULES: StoreRules = {
  itemPath: (path) => problemOf(() => validatePath(path)),
  record: (record) => {
    const problems: string[] = [];
    if (!UUID.test(record.id)) problems.push(`id "${record.id}" is not a UUID`);
    if (!(READ_REQUIREMENTS as readonly string[]).includes(record.requiredReadPermission)) problems.push('bad requiredReadPermission');
    if (!(WRITE_REQUIREMENTS as readonly string[]).includes(record.requiredWritePermission)) problems.push('bad requiredWritePermission');
    for (const field of ['createdAt', 'updatedAt'] as const) if (!ISO.test(record[field])) problems.push(`${field} is not an ISO 8601 time`);
    if (record.deletedAt !== null && !ISO.test(record.deletedAt)) problems.push('deletedAt is not an ISO 8601 time');
    return problems;
  },
  folderRule: (folder, rule) => {
    const problems: string[] = [];
    const pathProblem = problemOf(() => validateFolderPrefix(`${folder}/`));
    if (pathProblem) problems.push(pathProblem);
    if (!(READ_REQUIREMENTS as readonly string[]).includes(rule.requiredReadPermission)) problems.push('bad requiredReadPermission');
    if (!(WRITE_REQUIREMENTS as readonly string[]).includes(rule.requiredWritePermission)) problems.push('bad requiredWritePermission');
    return problems;
  },
};
