import type { Command } from 'commander';
import type { KnowledgeItem } from '../http/presenters.js';
import { itemUrlPath } from './apiClient.js';
import { UsageError } from './errors.js';
import { client, withTarget, type Target } from './itemTarget.js';
import { print } from './output.js';

type TrashItem = KnowledgeItem & { deletedAt: string | null; deletedBy: string | null };

/**
 * `knowledge-store item trash|restore|purge`: what `item rm` put in the trash (README, History, trash and the
 * admin API), admin keys only, as the API has it. A purge frees the path for good (git's history keeps the
 * content), so it asks for --yes, as `gh repo delete` does.
 */
export function addTrashCommands(item: Command): void {
  withTarget(item.command('trash').description('list the items in the trash: path, when deleted, by which key (admin keys)'))
    .action(async (opts: Target) => {
      const { data } = await client(opts).call<{ items: TrashItem[] }>({ path: '/trash' });
      print(opts, data.items.map((i) => `${i.path}\t${i.deletedAt ?? ''}\t${i.deletedBy ?? ''}`).join('\n') || 'The trash is empty.', data.items);
    });

  withTarget(item.command('restore <path>').description('put an item back from the trash at its path, with its id and history (admin keys)'))
    .action(async (path: string, opts: Target) => {
      const { data } = await client(opts).call<{ item: KnowledgeItem }>({ method: 'POST', path: '/trash/restore', body: { path } });
      const { content: _content, ...rest } = data.item;
      print(opts, `Restored ${data.item.path}`, rest);
    });

  withTarget(item.command('purge <path>').description('remove an item from the trash for good: its path is free again (admin keys; git history keeps it)'))
    .option('--yes', 'purge it: the API cannot bring it back')
    .action(async (path: string, opts: Target & { yes?: boolean }) => {
      if (!opts.yes) throw new UsageError(`purging ${path} cannot be undone through the API (git history keeps its content): add --yes`);
      const { data } = await client(opts).call<{ message: string }>({ method: 'DELETE', path: `/trash/items/${itemUrlPath(path)}` });
      print(opts, `Purged ${path}`, { path, purged: true, message: data.message });
    });
}
