import { InvalidArgumentError, Option, type Command } from 'commander';
import { CHANGE_KINDS } from '../domain/webhookDelivery.js';
import type { WebhookView } from '../domain/webhooks.js';
import { client, withTarget, type Target } from './itemTarget.js';
import { print } from './output.js';

/**
 * `knowledge-store webhook add|ls|rm|deliveries`: the webhooks of a running server (README, Webhooks (admin)),
 * admin keys only, as `POST /webhooks`, `GET /webhooks`, `DELETE /webhooks/{id}` and `GET
 * /webhooks/{id}/deliveries`. What a hook may be (its URL, its folder, at most 50) the server checks, with its
 * own messages.
 */

/** A delivery of a hook's log, with every attempt at it, as the API answers it. */
type Delivery = NonNullable<WebhookView['lastDelivery']>;

/** A change kind of the repeatable --event, in the order given; anything else is a usage error (exit 2). */
function eventKind(value: string, previous: string[] | undefined): string[] {
  if (!(CHANGE_KINDS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${CHANGE_KINDS.join(', ')}`);
  return [...(previous ?? []), value];
}

const hookUrl = (id: string): string => `/webhooks/${encodeURIComponent(id)}`;

/** id, state, URL, kinds, folder, last delivery: a line of `webhook ls`. */
function hookLine(h: WebhookView): string {
  const state = h.state === 'stopped' && h.stoppedReason ? `stopped (${h.stoppedReason})` : h.state;
  const last = h.lastDelivery ? `${h.lastDelivery.status} ${h.lastDelivery.commitId.slice(0, 12)}` : 'none yet';
  return [h.id, state, h.url, h.events.join(','), h.prefix ?? '(all)', last].join('\t');
}

/**
 * A line per attempt, newest first (the API keeps a delivery's attempts oldest first): when, the delivery, its
 * commit, its status, the receiver's HTTP status (- for no answer), how long, why it failed. A delivery not
 * tried yet is one line of dashes, so that it shows.
 */
function attemptLines(deliveries: readonly Delivery[]): string[] {
  return deliveries.flatMap((d) => {
    const head = [d.id, d.commitId.slice(0, 12), d.status];
    if (d.attempts.length === 0) return [['-', ...head, '-', '-', '-'].join('\t')];
    return [...d.attempts].reverse().map((a) => [a.at, ...head, a.status ?? '-', `${a.ms}ms`, a.error ?? '-'].join('\t'));
  });
}

export function addWebhookCommands(program: Command): void {
  const webhook = program.command('webhook').description('webhooks of a running server, through its API (admin keys; $KNOWLEDGE_URL, $KNOWLEDGE_KEY)');

  withTarget(
    webhook
      .command('add')
      .description("register a receiver of the commits after now, and print its signing secret (shown once; the hook's id goes to stderr)")
      // Named as the API names it; --url stays the server's, as for every command.
      .argument('<url>', 'the receiver: where each commit is POSTed (http or https)'),
  )
    .addOption(new Option('--event <kind>', `only changes of this kind: ${CHANGE_KINDS.join(', ')} (repeat for several; default all three)`).argParser(eventKind))
    .option('--prefix <folder/>', 'only changes of items under this folder')
    .action(async (url: string, opts: Target & { event?: string[]; prefix?: string }) => {
      const body = { url, ...(opts.event ? { events: opts.event } : {}), ...(opts.prefix !== undefined ? { prefix: opts.prefix } : {}) };
      const { data } = await client(opts).call<{ webhook: WebhookView; secret: string }>({ method: 'POST', path: '/webhooks', body });
      const h = data.webhook;
      // The secret alone on stdout, as `key create` prints a key: `SECRET=$(knowledge-store webhook add …)`.
      if (!opts.json) process.stderr.write(`Created webhook ${h.id} for ${h.url} (${h.events.join(', ')}; ${h.prefix ?? 'every folder'}). Its signing secret, shown once:\n`);
      print(opts, data.secret, data);
    });

  withTarget(webhook.command('ls').description('list the webhooks: id, state, URL, kinds, folder, last delivery (never their secrets)'))
    .action(async (opts: Target) => {
      const { data } = await client(opts).call<{ webhooks: WebhookView[] }>({ path: '/webhooks' });
      print(opts, data.webhooks.map(hookLine).join('\n') || 'No webhooks.', data.webhooks);
    });

  withTarget(webhook.command('rm <id>').description('delete a webhook: no delivery after'))
    .action(async (id: string, opts: Target) => {
      const { data } = await client(opts).call<{ message: string }>({ method: 'DELETE', path: hookUrl(id) });
      print(opts, `Deleted webhook ${id}`, { id, deleted: true, message: data.message });
    });

  withTarget(webhook.command('deliveries <id>').description("a webhook's recent deliveries, a line per attempt, newest first: when, delivery, commit, its status, HTTP status, time taken, error"))
    .action(async (id: string, opts: Target) => {
      const { data } = await client(opts).call<{ deliveries: Delivery[] }>({ path: `${hookUrl(id)}/deliveries` });
      print(opts, attemptLines(data.deliveries).join('\n') || 'No deliveries yet.', data.deliveries);
    });
}
