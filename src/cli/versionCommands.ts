import { InvalidArgumentError, Option, type Command } from 'commander';
import type { VersionView } from '../domain/versionView.js';
import type { KnowledgeItem } from '../http/presenters.js';
import { itemUrlPath } from './apiClient.js';
import { client, withTarget, type Target } from './itemTarget.js';
import { print } from './output.js';

/** A version number for an option or argument: from 1 (the item's creation); the API refuses past the last, with its own message. */
export function versionNumber(value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError("must be a version number (1 = the item's creation)");
  return Number(value);
}

/**
 * `knowledge-store item history|diff|rollback`: an item's versions (README, History, trash and the admin API),
 * every one reachable and history never rewritten: a rollback is a new commit with an old version's content.
 */
export function addVersionCommands(item: Command): void {
  withTarget(item.command('history <path>').description('the versions of an item, newest first'))
    .action(async (path: string, opts: Target) => {
      const { data } = await client(opts).call<{ versions: VersionView[] }>({ path: `/history/${itemUrlPath(path)}` });
      const rows = data.versions.map((v) => [v.version, v.timestamp, v.action, v.commitId.slice(0, 12), v.author.name, v.message.split('\n')[0]].join('\t'));
      print(opts, rows.join('\n'), data.versions);
    });

  withTarget(item.command('diff <path>').description('a unified diff of the content between two versions of an item'))
    .addOption(new Option('--from <n>', 'the older version (1 = its creation)').argParser(versionNumber).makeOptionMandatory())
    .addOption(new Option('--to <n>', 'the newer version').argParser(versionNumber).makeOptionMandatory())
    .action(async (path: string, opts: Target & { from: number; to: number }) => {
      const { data } = await client(opts).call<{ from: number; to: number; diff: string }>({
        path: `/diff/${itemUrlPath(path)}`,
        query: { from: String(opts.from), to: String(opts.to) },
      });
      // The diff as the server made it (it ends its own lines), for `patch` or a pager.
      if (opts.json) print(opts, '', data);
      else process.stdout.write(data.diff);
    });

  withTarget(
    item
      .command('rollback')
      .description("a new version of an item with an old version's content (one commit; history is kept)")
      .argument('<path>')
      .argument('<version>', 'the version whose content comes back (as `item history` numbers them)', versionNumber),
  ).action(async (path: string, target: number, opts: Target) => {
    const { data } = await client(opts).call<{ item: KnowledgeItem }>({ method: 'POST', path: '/rollback', body: { path, version: target } });
    const { content: _content, ...rest } = data.item;
    print(opts, `Rolled back ${data.item.path} to the content of version ${target}`, rest);
  });
}
