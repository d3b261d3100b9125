import { Option, type Command } from 'commander';
import type { FolderRuleView } from '../domain/folders.js';
import { READ_REQUIREMENTS, WRITE_REQUIREMENTS } from '../domain/permissions.js';
import { itemUrlPath } from './apiClient.js';
import { UsageError } from './errors.js';
import { client, withTarget, type Target } from './itemTarget.js';
import { print } from './output.js';

/**
 * `knowledge-store folder ls|get|set`: the folder rules of a running server (README, History, trash and the admin
 * API), admin keys only, as `GET /folders`, `GET /folders/{folder}` and `PUT /folders/{folder}`. A rule says what
 * `inherit` resolves to under a folder; which values it takes and who may set it the server decides, with its
 * own messages.
 */

/**
 * A folder as the route takes it: `docs/` or `docs` alike (the `--prefix docs/` of other commands; the server
 * takes both too), sent without the slash. No folder at all would be the list's route (GET /folders/ answers the
 * list), so it is refused here.
 */
function folderUrl(folder: string): string {
  const name = folder.replace(/\/$/, '');
  if (name === '') throw new UsageError('give a folder, e.g. docs/');
  return `/folders/${itemUrlPath(name)}`;
}

/** folder/, read, write, when set: what `folder ls` prints a line of, and `folder get` its one line. */
const ruleLine = (r: FolderRuleView): string => [`${r.folder}/`, r.requiredReadPermission, r.requiredWritePermission, r.updatedAt ?? '-'].join('\t');

export function addFolderCommands(program: Command): void {
  const folder = program.command('folder').description('folder rules of a running server, through its API (admin keys; $KNOWLEDGE_URL, $KNOWLEDGE_KEY)');

  withTarget(folder.command('ls').description('list the folders that have a rule: folder, read, write, when set'))
    .action(async (opts: Target) => {
      const { data } = await client(opts).call<{ folders: FolderRuleView[] }>({ path: '/folders' });
      print(opts, data.folders.map(ruleLine).join('\n') || 'No folder rules.', data.folders);
    });

  withTarget(folder.command('get <folder/>').description("a folder's rule: folder, read, write, when set (inherit for both, and -, where it has none)"))
    .action(async (name: string, opts: Target) => {
      const { data } = await client(opts).call<{ folder: FolderRuleView }>({ path: folderUrl(name) });
      print(opts, ruleLine(data.folder), data.folder);
    });

  withTarget(
    folder
      .command('set <folder/>')
      .description("set what `inherit` resolves to for the items under a folder (one commit, in effect at once); an option left out keeps its value, a rule of inherit for both is removed")
      .addOption(
        new Option('--read <permission>', "who may read them: knowledge:read every key, knowledge:write writers and admins, knowledge:admin admins only; inherit clears it (the nearest parent folder's rule, else every key)").choices(READ_REQUIREMENTS),
      )
      .addOption(
        new Option('--write <permission>', "who may write them: knowledge:write writers and admins, knowledge:admin admins only; inherit clears it (the nearest parent folder's rule, else writers and admins)").choices(WRITE_REQUIREMENTS),
      ),
  ).action(async (name: string, opts: Target & { read?: string; write?: string }) => {
    // The API takes an empty body and changes nothing: on the command line that is a mistake, not a request.
    if (opts.read === undefined && opts.write === undefined) throw new UsageError('give --read <permission>, --write <permission> or both');
    const body = { ...(opts.read !== undefined ? { requiredReadPermission: opts.read } : {}), ...(opts.write !== undefined ? { requiredWritePermission: opts.write } : {}) };
    const { data } = await client(opts).call<{ folder: FolderRuleView }>({ method: 'PUT', path: folderUrl(name), body });
    const r = data.folder;
    const text = r.updatedAt === null ? `No rule for ${r.folder}/ (read and write inherit)` : `Set ${r.folder}/: read ${r.requiredReadPermission}, write ${r.requiredWritePermission}`;
    print(opts, text, r);
  });
}
