import type { FsPromises } from '../fs/fs.js';
import type { GitCli } from '../git/gitCli.js';
import { readRef } from '../git/refs.js';
import { listTreeFiles } from '../git/treeWalk.js';
import { contentFiles, LAYOUT, parseFolderRule, parseRecord, STORE_CONFIG, type FolderRule, type ItemRecord } from './itemRecord.js';
import { ObjectReader } from './objectReader.js';

/**
 * The domain's rules for what a repository may hold (path rules, permission
 * values), passed in: storage does not know them. Each returns problems, if any.
 */
export interface StoreRules {
  itemPath(path: string): string | undefined;
  record(record: ItemRecord): string[];
  folderRule(folder: string, rule: FolderRule): string[];
}

export interface VerifyReport {
  orgId: string;
  head: string | null;
  items: number;
  trashed: number;
  /** Empty when the repository is sound. */
  problems: string[];
  /** Whether the search index was compared with the tree (only where this process keeps it). */
  search?: 'checked';
}

/**
 * Checks one organization: C git's `fsck --strict` judges the objects and refs;
 * then the head tree is checked against the store's own rules: every record
 * has its content (at the path, or under `.trash/` when deleted), every file
 * has a record, ids are unique.
 */
export async function verifyRepository(args: {
  fs: FsPromises;
  git: GitCli;
  gitdir: string;
  orgId: string;
  rules?: StoreRules;
}): Promise<VerifyReport> {
  const { fs, gitdir, orgId, rules } = args;
  const problems: string[] = [];
  const fsck = await args.git.fsckStrict(gitdir);
  if (fsck.code !== 0) problems.push(`git fsck --strict failed: ${fsck.output.trim() || `exit ${fsck.code}`}`);
  const report: VerifyReport = { orgId, head: null, items: 0, trashed: 0, problems };
  try {
    report.head = await readRef(fs, gitdir);
  } catch (err) {
    problems.push(`cannot read refs/heads/main: ${String(err)}`);
    return report;
  }
  if (!report.head) {
    problems.push('refs/heads/main does not exist');
    return report;
  }
  const reader = new ObjectReader(fs, gitdir);
  try {
    const files = await listTreeFiles({ tree: (await reader.commit(report.head)).tree, readTree: (oid) => reader.trees.entries(oid) });
    const configOid = files.get(LAYOUT.configPath);
    if (!configOid) problems.push(`${LAYOUT.configPath} is missing: not a knowledge store repository`);
    else {
      const text = await reader.blobText(configOid);
      let config: unknown;
      try {
        config = JSON.parse(text);
      } catch {
        config = undefined;
      }
      const c = (config ?? {}) as Record<string, unknown>;
      if (c.format !== STORE_CONFIG.format || c.version !== STORE_CONFIG.version) {
        problems.push(`${LAYOUT.configPath}: not a knowledge store repository of format version ${STORE_CONFIG.version}`);
      }
    }
    const recordPrefix = `${LAYOUT.itemsRoot}/`;
    const accounted = new Set<string>([LAYOUT.configPath]);
    const ids = new Map<string, string>();
    for (const [file, oid] of files) {
      if (!file.startsWith(recordPrefix)) continue;
      accounted.add(file);
      const path = file.slice(recordPrefix.length);
      let record;
      try {
        record = parseRecord(await reader.blobText(oid), file);
      } catch (err) {
        problems.push(`${file}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      if (record.path !== path) problems.push(`${file}: record names path "${record.path}"`);
      const pathProblem = rules?.itemPath(path);
      if (pathProblem) problems.push(`${path}: ${pathProblem}`);
      for (const p of rules?.record(record) ?? []) problems.push(`${file}: ${p}`);
      const other = ids.get(record.id);
      if (other) problems.push(`${file}: id ${record.id} is also used by ${other}`);
      ids.set(record.id, path);
      if (record.deletedAt) report.trashed++;
      else report.items++;
      // A file item's record names its original bytes (fileKey): they must be the blob at its path.
      for (const want of contentFiles(record, '')) {
        const oid = files.get(want.path);
        if (!oid) problems.push(`${path}: record has no content at ${want.path}`);
        else if (want.oid !== '' && oid !== want.oid) problems.push(`${path}: the file at ${want.path} is not blob ${record.fileKey}`);
        accounted.add(want.path);
      }
      if (record.itemType === 'file' && (record.fileKey === null || record.fileSize === null || record.contentType === null || record.fileName === null)) {
        problems.push(`${path}: a file item's record lacks fileKey, fileName, contentType or fileSize`);
      }
      if ((record.deletedAt === null) !== (record.deletedBy === null)) problems.push(`${path}: deletedAt and deletedBy disagree`);
    }
    for (const [file, oid] of files) {
      if (accounted.has(file)) continue;
      const folder = LAYOUT.folderOfRulePath(file);
      if (folder !== undefined) {
        try {
          const rule = parseFolderRule(await reader.blobText(oid), file);
          if (rule.folder !== folder) problems.push(`${file}: rule names folder "${rule.folder}"`);
          for (const p of rules?.folderRule(folder, rule) ?? []) problems.push(`${file}: ${p}`);
        } catch (err) {
          problems.push(`${file}: ${err instanceof Error ? err.message : String(err)}`);
        }
        continue;
      }
      problems.push(`${file}: file has no item record`);
    }
  } finally {
    reader.close();
  }
  return report;
}
