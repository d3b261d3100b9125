import { Command, Option } from 'commander';
import type { KnowledgeItem, presentSearchResult } from '../http/presenters.js';
import { MAX_LIST_LIMIT } from '../domain/itemReads.js';
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT } from '../domain/search.js';
import { itemUrlPath } from './apiClient.js';
import { client, readText, withTarget, type Target } from './itemTarget.js';
import { intIn, print, searchLines } from './output.js';
import { addFileCommands } from './fileCommands.js';
import { addStructuralCommands } from './structuralCommands.js';
import { addTrashCommands } from './trashCommands.js';
import { addVersionCommands, versionNumber } from './versionCommands.js';
import { addWatchCommand } from './watchCommand.js';

/**
 * `knowledge-store item ls|get|put|rm|search`, and beside them upload, download (fileCommands.ts), history, diff, rollback (versionCommands.ts),
 * trash, restore, purge (trashCommands.ts), mv, commit, revert (structuralCommands.ts), changes and watch
 * (watchCommand.ts): the items of a running server, through its HTTP API (README, The API), so that scripts
 * need no curl. The server is $KNOWLEDGE_URL (or --url), the key $KNOWLEDGE_KEY (or --key); the key's
 * organization and role decide what is there, as for any client.
 */
type ItemWithEtag = KnowledgeItem & { etag: string | null };

type SearchHit = ReturnType<typeof presentSearchResult>;

export function addItemCommands(program: Command): void {
  const item = program.command('item').description('items of a running server, through its API ($KNOWLEDGE_URL, $KNOWLEDGE_KEY)');

  withTarget(item.command('ls').description('list the items the key may read, sorted by path (every page)'))
    .option('--prefix <folder/>', 'only items under this folder')
    .addOption(new Option('--page-size <n>', `items per request, 1 to ${MAX_LIST_LIMIT}`).argParser(intIn(1, MAX_LIST_LIMIT)).default(MAX_LIST_LIMIT))
    .action(async (opts: Target & { prefix?: string; pageSize: number }) => {
      const api = client(opts);
      const items: KnowledgeItem[] = [];
      let cursor: string | undefined;
      do {
        const { data } = await api.call<{ items: KnowledgeItem[]; nextCursor?: string | null }>({
          path: '',
          query: { prefix: opts.prefix, limit: String(opts.pageSize), content: 'false', cursor },
        });
        items.push(...data.items);
        cursor = data.nextCursor ?? undefined;
      } while (cursor);
      print(opts, items.map((i) => `${i.path}\t${i.updatedAt}`).join('\n') || 'No items.', items);
    });

  withTarget(
    item
      .command('get')
      .description('print the content of an item, or of one of its versions (--json: the item, with its ETag)')
      .argument('<path>')
      .argument('[version]', 'a version as `item history` numbers them (1 = its creation); default the current one', versionNumber),
  )
    .action(async (path: string, version: number | undefined, opts: Target) => {
      const query = { version: version?.toString() };
      const { data, etag } = await client(opts).call<{ item: KnowledgeItem }>({ path: `/items/${itemUrlPath(path)}`, query });
      // The content exactly as stored, so that `item get a.md > f && item put a.md --file f` changes nothing.
      if (opts.json) print(opts, '', { ...data.item, etag } satisfies ItemWithEtag);
      else process.stdout.write(data.item.content ?? '');
    });

  withTarget(item.command('put <path>').description('create or update an item from --file or stdin (one commit)'))
    .option('--file <file>', 'read the content from this file (default: stdin)')
    .option('-m, --message <message>', 'the commit message')
    .option('--if-match <etag>', 'only if the item still has this ETag (as `item get --json` shows it)')
    .action(async (path: string, opts: Target & { file?: string; message?: string; ifMatch?: string }) => {
      const api = client(opts);
      const content = await readText(opts.file, 'the content', ': a PDF, DOCX or other document goes in with `item upload`');
      const { data, etag } = await api.call<{ item: KnowledgeItem }>({
        method: 'PUT',
        path: `/items/${itemUrlPath(path)}`,
        body: { content, ...(opts.message !== undefined ? { message: opts.message } : {}) },
        headers: opts.ifMatch ? { 'If-Match': opts.ifMatch } : {},
      });
      const { content: _content, ...rest } = data.item;
      print(opts, `Saved ${data.item.path} (ETag ${etag ?? 'none'})`, { ...rest, etag });
    });

  withTarget(item.command('rm <path>').description('delete an item (soft: it goes to the trash, recoverable; admin keys only)'))
    .action(async (path: string, opts: Target) => {
      const { data } = await client(opts).call<{ message: string }>({ method: 'DELETE', path: `/items/${itemUrlPath(path)}` });
      print(opts, `Deleted ${path} (in the trash until purged)`, { path, deleted: true, message: data.message });
    });

  withTarget(item.command('search <q>').description('full-text search of the items the key may read, best first'))
    .option('--prefix <folder/>', 'only items under this folder')
    .addOption(new Option('--limit <n>', `results, 1 to ${MAX_SEARCH_LIMIT}`).argParser(intIn(1, MAX_SEARCH_LIMIT)).default(DEFAULT_SEARCH_LIMIT))
    .action(async (q: string, opts: Target & { prefix?: string; limit: number }) => {
      const { data } = await client(opts).call<{ results: SearchHit[] }>({
        path: '/search',
        query: { q, prefix: opts.prefix, limit: String(opts.limit) },
      });
      print(opts, searchLines(data.results), data.results);
    });

  addFileCommands(item);
  addVersionCommands(item);
  addTrashCommands(item);
  addStructuralCommands(item);
  addWatchCommand(item);
}
