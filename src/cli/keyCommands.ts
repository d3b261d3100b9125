import { promises as fsp } from 'node:fs';
import type { Command } from 'commander';
import { OrgNotFound } from '../domain/errors.js';
import { createKey, listKeys, revokeKey } from '../domain/keys.js';
import { exportKeys, importKeys } from '../domain/keyTransfer.js';
import { validateOrgId } from '../domain/orgs.js';
import type { FsPromises } from '../storage/fs/fs.js';
import { writeFileDurable } from '../storage/fs/durable.js';
import { jsonOption, print } from './output.js';
import { dataDirOption, stores, type Common } from './localStore.js';

/** A repeatable option's values, in the order given (`--scope docs/ --scope notes/`). */
const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** `key create|list|revoke|export|import`: keys.json, changed under its lock beside a running server. */
export function addKeyCommands(program: Command): void {
  const key = program.command('key').description('API keys');
  key
    .command('create')
    .description('create an API key and print it (shown once)')
    .requiredOption('--org <orgId>', 'organization')
    .requiredOption('--role <role>', 'reader, writer or admin')
    .option('--name <name>', 'a name for the key (git author of its changes)')
    .option('--scope <folder>', 'limit the key to this folder (repeat for several); without it the key reaches the whole organization', collect, [])
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (opts: Common & { org: string; role: string; name?: string; scope: string[] }) => {
      const { orgs, keys } = await stores(opts);
      const orgId = validateOrgId(opts.org);
      if (!(await orgs.exists(orgId))) throw new OrgNotFound({ orgId });
      const scopes = opts.scope.length > 0 ? opts.scope : undefined;
      const created = await createKey({ keys, orgId, role: opts.role, name: opts.name ?? opts.role, scopes });
      print(opts, created.secret, {
        keyId: created.key.id,
        orgId,
        role: created.key.role,
        name: created.key.name,
        scopes: created.key.scopes ?? null,
        key: created.secret,
      });
    });
  key
    .command('list')
    .description('list the keys of an organization (never their secrets)')
    .requiredOption('--org <orgId>', 'organization')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (opts: Common & { org: string }) => {
      const { orgs, keys } = await stores(opts);
      const orgId = validateOrgId(opts.org);
      if (!(await orgs.exists(orgId))) throw new OrgNotFound({ orgId });
      const list = (await listKeys({ keys, orgId })).map(({ hash: _hash, ...k }) => k);
      const rows = list.map((k) =>
        [k.id, k.name, k.role, k.createdAt, k.lastUsedAt ?? 'never', k.revokedAt ? `revoked ${k.revokedAt}` : 'active', k.scopes?.join(',') ?? '(all)'].join(
          '\t',
        ),
      );
      print(opts, ['ID\tNAME\tROLE\tCREATED\tLAST USED\tSTATUS\tSCOPES', ...rows].join('\n'), list);
    });
  key
    .command('revoke <keyId>')
    .description('revoke a key; it is refused from its next request on')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (keyId: string, opts: Common) => {
      const { keys } = await stores(opts);
      const revoked = await revokeKey({ keys, keyId });
      print(opts, `Revoked ${revoked.id} (${revoked.name}, organization ${revoked.orgId})`, { keyId: revoked.id, revokedAt: revoked.revokedAt });
    });

  key
    .command('export <orgId>')
    .description("write the organization's key records (SHA-256 hashes, never secrets) as JSON, for `key import` on another node")
    .option('--out <file>', 'write to this file (created with mode 600) instead of stdout')
    .addOption(dataDirOption())
    .action(async (orgId: string, opts: Common & { out?: string }) => {
      const { orgs, keys } = await stores(opts);
      const exported = await exportKeys({ keys, orgId });
      if (exported.keys.length === 0 && !(await orgs.exists(exported.orgId))) throw new OrgNotFound({ orgId: exported.orgId });
      const text = `${JSON.stringify(exported, null, 2)}\n`;
      if (!opts.out) {
        process.stdout.write(text);
        return;
      }
      // Temp file, fsync, rename: an export cut short never leaves half a file where the last one was.
      await writeFileDurable(fsp as unknown as FsPromises, opts.out, text, 0o600);
      process.stderr.write(`Exported ${exported.keys.length} key(s) of ${exported.orgId} to ${opts.out}\n`);
    });
  key
    .command('import <orgId>')
    .description('add the keys of a `key export` file to the organization (all or nothing; importing the same file again changes nothing)')
    .requiredOption('--file <file>', 'the file `key export` wrote')
    .addOption(dataDirOption())
    .addOption(jsonOption())
    .action(async (orgId: string, opts: Common & { file: string }) => {
      const { orgs, keys } = await stores(opts);
      const id = validateOrgId(orgId);
      if (!(await orgs.exists(id))) throw new OrgNotFound({ orgId: id });
      const result = await importKeys({ keys, orgId: id, text: await fsp.readFile(opts.file, 'utf8') });
      print(opts, `Imported ${result.added.length} key(s) into ${id}; ${result.unchanged.length} already here.`, result);
    });
}
