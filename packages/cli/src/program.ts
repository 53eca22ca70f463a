/**
 * The `webhooks` command (commander) over `@webhooks/client`: subscriptions, test events, a tail, and
 * `listen`. `--api-url`/`--token`, or WEBHOOKS_API_URL/WEBHOOKS_TOKEN.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { createWebhookClient, type paths, type WebhookClient } from '@webhooks/client';
import { subscriptionLine, type SubscriptionView } from './format.js';
import { listen } from './listen.js';
import { problemError, tailDeliveries } from './tail.js';

/** Where the program writes, and what it reads of its environment. */
export interface ProgramIo {
  out(line: string): void;
  env: Record<string, string | undefined>;
  /** Ends `deliveries tail` (Ctrl-C in a terminal). */
  signal: AbortSignal;
}

/** A subscription's `destination`, as the API takes it. */
type Destination = NonNullable<
  paths['/api/webhooks']['post']['requestBody']['content']['application/json']['destination']
>;

/**
 * `--destination`: a JSON object with a `type`; the API checks the rest, naming the wrong field.
 * @throws InvalidArgumentError when it is not a JSON object with a string `type`
 */
function parseDestination(value: string): Destination {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(
      'not JSON: give an object such as {"type": "sqs", "broker": "aws", "queue": "orders"}',
    );
  }
  if (
    parsed === null ||
    typeof parsed !== 'object' ||
    typeof (parsed as { type?: unknown }).type !== 'string'
  )
    throw new InvalidArgumentError('must be a JSON object with a "type"');
  return parsed as Destination;
}

/** The API's address when neither `--api-url` nor WEBHOOKS_API_URL is given. */
export const defaultApiUrl = 'http://127.0.0.1:3000';

/**
 * The program, ready for `parseAsync(process.argv)`.
 * @throws Error (commander's, or {@link problemError}) from `parseAsync`; main.ts prints it and exits 1
 */
export function createProgram(io: ProgramIo): Command {
  const program = new Command('webhooks')
    .description('The webhook service from a terminal')
    .addOption(new Option('--api-url <url>', 'the API').env('WEBHOOKS_API_URL').default(defaultApiUrl))
    .addOption(new Option('--token <jwt>', 'a bearer token of your account').env('WEBHOOKS_TOKEN'))
    .showHelpAfterError();

  const access = (command: Command): { apiUrl: string; token: string } => {
    const { apiUrl, token } = command.optsWithGlobals<{ apiUrl: string; token?: string }>();
    const given = token ?? io.env.WEBHOOKS_TOKEN;
    if (given === undefined || given === '') throw new Error('no token: pass --token or set WEBHOOKS_TOKEN');
    return { apiUrl, token: given };
  };
  const client = (command: Command): WebhookClient => {
    const { apiUrl, token } = access(command);
    return createWebhookClient({ baseUrl: apiUrl, token });
  };

  const subscriptions = program.command('subscriptions').description('Your subscriptions');
  subscriptions
    .command('list')
    .description('List them, oldest first')
    .option('--type <event-type>', 'only those that receive this event type')
    .action(async (options: { type?: string }, command: Command) => {
      const api = client(command);
      for (let page = 1; ; page += 1) {
        const query = { page, page_size: 100, ...(options.type === undefined ? {} : { type: options.type }) };
        const { data, error } = await api.GET('/api/webhooks', { params: { query } });
        if (error !== undefined) throw problemError(error);
        for (const subscription of data.results) io.out(subscriptionLine(subscription as SubscriptionView));
        if (data.next === null) break;
      }
    });
  subscriptions
    .command('create')
    .description(
      'Subscribe a callback URL, or a destination of your operator (--destination); prints its id and signing secret (shown once)',
    )
    .argument('[callback-url]', 'an absolute http(s) URL of your app; left out with --destination')
    .option('--events <types>', "event types, comma-separated, wildcards allowed ('call.*')")
    .option('--webhook-id <id>', 'your own id, sent in every payload')
    .option(
      '--destination <json>',
      'a broker or AWS destination as the API takes it, such as \'{"type": "sqs", "broker": "aws", "queue": "orders"}\' (docs/destinations.md)',
      parseDestination,
    )
    .action(
      async (
        callbackUrl: string | undefined,
        options: { events?: string; webhookId?: string; destination?: Destination },
        command: Command,
      ) => {
        if ((callbackUrl === undefined) === (options.destination === undefined))
          throw new InvalidArgumentError('give a callback URL or --destination, not both');
        const body = {
          ...(callbackUrl === undefined
            ? { destination: options.destination! }
            : { callback_url: callbackUrl }),
          ...(options.events === undefined ? {} : { event_types: options.events.split(',') }),
          ...(options.webhookId === undefined ? {} : { webhook_id: options.webhookId }),
        };
        const { data, error } = await client(command).POST('/api/webhooks', { body });
        if (error !== undefined) throw problemError(error);
        io.out(`${data.id}  ${data.secret}`);
      },
    );
  subscriptions
    .command('delete')
    .description('Delete one; its pending deliveries are dropped')
    .argument('<id>', 'the subscription id')
    .action(async (id: string, _options: unknown, command: Command) => {
      const { error } = await client(command).DELETE('/api/webhooks/{id}', { params: { path: { id } } });
      if (error !== undefined) throw problemError(error);
      io.out(`deleted ${id}`);
    });

  program
    .command('trigger')
    .description(
      "Send the catalogue's example of an event type to each of your active subscriptions that receives it",
    )
    .argument('<event-type>', 'such as call.completed')
    .action(async (type: string, _options: unknown, command: Command) => {
      const api = client(command);
      const { data, error } = await api.GET('/api/webhooks', {
        params: { query: { type, status: 'active', page_size: 100 } },
      });
      if (error !== undefined) throw problemError(error);
      if (data.results.length === 0) throw new Error(`no active subscription of yours receives ${type}`);
      for (const { id } of data.results) {
        const sent = await api.POST('/api/webhooks/{id}/test-events', {
          params: { path: { id } },
          body: { type },
        });
        if (sent.error !== undefined) throw problemError(sent.error);
        io.out(`sent ${type} to ${id} (event ${sent.data.id})`);
      }
    });

  program
    .command('deliveries')
    .description('Your deliveries')
    .command('tail')
    .description('Print each delivery as it changes, until interrupted')
    .addOption(
      new Option('--status <status>', 'only deliveries in this status').choices([
        'pending',
        'succeeded',
        'failed',
        'cancelled',
      ]),
    )
    .option('--interval <ms>', 'time between polls, in ms', (value) => Number.parseInt(value, 10), 1000)
    .option('--since <time>', 'follow events accepted from this ISO 8601 time on (default: now)', (value) => {
      const since = new Date(value);
      if (Number.isNaN(since.getTime())) throw new InvalidArgumentError('not an ISO 8601 time');
      return since;
    })
    .action(async (options: { status?: string; interval: number; since?: Date }, command: Command) => {
      await tailDeliveries(client(command), {
        status: options.status,
        since: options.since,
        intervalMs: options.interval,
        signal: io.signal,
        print: io.out,
      });
    });

  program
    .command('listen')
    .description(
      'Relay your deliveries to a local app through the service, until interrupted: a subscription of its own, deleted when it stops',
    )
    .requiredOption(
      '--forward-to <url>',
      'the local URL each delivery is POSTed to, such as http://localhost:3000/webhooks',
    )
    .option('--events <types>', "event types, comma-separated, wildcards allowed ('call.*'); default all")
    .option(
      '--timeout <ms>',
      'how long the local app has to answer, in ms',
      (value) => Number.parseInt(value, 10),
      10_000,
    )
    .action(async (options: { forwardTo: string; events?: string; timeout: number }, command: Command) => {
      const { apiUrl, token } = access(command);
      await listen(client(command), {
        apiUrl,
        token,
        forwardTo: options.forwardTo,
        eventTypes: options.events?.split(','),
        timeoutMs: options.timeout,
        signal: io.signal,
        print: io.out,
      });
    });

  return program;
}
