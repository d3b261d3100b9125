import { KnowledgeError } from '../common/errors.js';
import { hideCredentials } from '../common/redact.js';
import type { KeyRecord, KeyStore } from '../storage/keys/keyStore.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { InvalidInput } from './errors.js';
import { STORE_RULES } from './integrity.js';
import { createKey } from './keys.js';
import { addKeys, type KeyImportResult } from './keyTransfer.js';
import { validateOrgId } from './orgs.js';

export class ImportRefused extends KnowledgeError<{ problems: string[] }> {
  constructor(data: { problems: string[] }) {
    super('IMPORT_REFUSED', `Refused: not a valid knowledge repository (${data.problems.length} problem(s))`, data);
  }
}

interface ImportArgs {
  orgs: OrgStore;
  keys: KeyStore;
  orgId: string;
  source: string;
  /** The organization's keys, read (and checked) by `readKeyExport` before anything is cloned. */
  keyRecords?: readonly KeyRecord[];
  progress?: (line: string) => void;
}

interface Imported {
  orgId: string;
  items: number;
  trashed: number;
}

interface NewAdminKey {
  keyId: string;
  secret: string;
}

/**
 * `org import` (see README, Backups and git access): rebuilds an organization from a clone of
 * another one's repository. The source may come from anywhere, so it is cloned
 * aside and held to everything `verify` checks (git fsck --strict, path rules,
 * records, folder rules) before it becomes the organization. Ids, timestamps,
 * permissions, folder rules, trash and history come back as they were: they are
 * the repository. Keys are not in git: a new admin key is made, unless the organization's
 * keys come with it (`--keys`, from `key export`: failover, README Scaling) — then they are its keys.
 */
export async function importOrganization(args: ImportArgs & { keyRecords?: undefined }): Promise<Imported & NewAdminKey>;
export async function importOrganization(args: ImportArgs): Promise<Imported & (NewAdminKey | { keys: KeyImportResult })>;
export async function importOrganization(args: ImportArgs): Promise<Imported & (NewAdminKey | { keys: KeyImportResult })> {
  const { orgs, keys, source, progress = () => undefined } = args;
  const orgId = validateOrgId(args.orgId);
  progress(`Cloning ${hideCredentials(source, source)}...`);
  const { gitdir, problems } = await orgs.cloneForImport(orgId, source);
  try {
    if (problems.length > 0) throw new ImportRefused({ problems });
    progress('Checking the repository (git fsck --strict, records, paths)...');
    const report = await orgs.verify(orgId, STORE_RULES, gitdir);
    if (report.problems.length > 0) throw new ImportRefused({ problems: report.problems });
    await orgs.adopt(gitdir, orgId);
    if (args.keyRecords) {
      // After the organization is ours, never before: keys added first would open an organization of
      // the same id that another import created meanwhile.
      const imported = await addKeys({ keys, orgId, records: args.keyRecords }).catch((err: unknown) => {
        const reason = err instanceof Error ? err.message : String(err);
        throw new InvalidInput({ reason: `Organization ${orgId} was imported, but not its keys: ${reason}. Run \`key import ${orgId}\` once it is fixed` });
      });
      return { orgId, items: report.items, trashed: report.trashed, keys: imported };
    }
    const { key, secret } = await createKey({ keys, orgId, role: 'admin', name: 'admin' });
    return { orgId, keyId: key.id, secret, items: report.items, trashed: report.trashed };
  } catch (err) {
    await orgs.discard(gitdir);
    throw err;
  }
}
