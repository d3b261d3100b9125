import { execFile } from 'node:child_process';
import git from 'isomorphic-git';
import type { FsPromises } from './fs.js';
import { LAYOUT, parseRecord } from './itemRecord.js';
import { readRef } from './refs.js';
import { listTreeFiles, treeReader } from './treeWalk.js';

export interface VerifyReport {
  orgId: string;
  head: string | null;
  items: number;
  trashed: number;
  /** Empty when the repository is sound. */
  problems: string[];
}

/**
 * Checks one organization: C git's `fsck --strict` judges the objects and refs;
 * then the head tree is checked against the store's own rules: every record
 * has its content (at the path, or under `.trash/` when deleted), every file
 * has a record, ids are unique.
 */
export async function verifyRepository(args: { fs: FsPromises; gitdir: string; orgId: string }): Promise<VerifyReport> {
  const { fs, gitdir, orgId } = args;
  const problems: string[] = [];
  const fsck = await runGit(['--git-dir', gitdir, 'fsck', '--strict', '--no-progress']);
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
  const cache = {};
  const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir, oid: report.head, cache });
  const files = await listTreeFiles({ tree: commit.tree, readTree: treeReader(fs, gitdir, cache) });
  if (!files.has(LAYOUT.configPath)) problems.push(`${LAYOUT.configPath} is missing: not a knowledge store repository`);
  const recordPrefix = `${LAYOUT.itemsRoot}/`;
  const trashPrefix = `${LAYOUT.trashRoot}/`;
  const accounted = new Set<string>([LAYOUT.configPath]);
  const ids = new Map<string, string>();
  for (const [file, oid] of files) {
    if (!file.startsWith(recordPrefix)) continue;
    accounted.add(file);
    const path = file.slice(recordPrefix.length);
    let record;
    try {
      const { blob } = await git.readBlob({ fs: { promises: fs }, gitdir, oid, cache });
      record = parseRecord(Buffer.from(blob).toString('utf8'), file);
    } catch (err) {
      problems.push(`${file}: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    if (record.path !== path) problems.push(`${file}: record names path "${record.path}"`);
    const other = ids.get(record.id);
    if (other) problems.push(`${file}: id ${record.id} is also used by ${other}`);
    ids.set(record.id, path);
    const contentPath = record.deletedAt ? `${trashPrefix}${path}` : path;
    if (record.deletedAt) report.trashed++;
    else report.items++;
    if (!files.has(contentPath)) problems.push(`${path}: record has no content at ${contentPath}`);
    accounted.add(contentPath);
    if ((record.deletedAt === null) !== (record.deletedBy === null)) problems.push(`${path}: deletedAt and deletedBy disagree`);
  }
  for (const file of files.keys()) {
    if (accounted.has(file)) continue;
    if (file.startsWith(`${LAYOUT.metaRoot}/`)) continue; // other store metadata (folder rules, ...)
    problems.push(`${file}: file has no item record`);
  }
  return report;
}

function runGit(argv: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('git', argv, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}
