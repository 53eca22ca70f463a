/**
 * The end-to-end demo: a client application subscribes through the HTTP API (with
 * `@webhooks/client`, as a client app would), internal
 * services publish a burst of events, and the client receives every one of them, signed and
 * verified, with the retries of a callback that fails its first answers. Returns a summary; the
 * caller prints it. `ok` is true only when every expected delivery arrived, verified, exactly once
 * per route and `webhook-id`.
 */
import { randomBytes } from 'node:crypto';
import { createEventPublisher, exampleCatalogueFile, loadCatalogue } from '@webhooks/shared';
import { createTokenMinter, developmentJwtSecret } from '@webhooks/api';
import { createWebhookClient, type WebhookClient } from '@webhooks/client';
import { startClientReceiver } from './client-receiver.js';
import { prometheusSample } from '../lib/prometheus-sample.js';
import { sleep, waitFor } from '../lib/wait.js';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../lib/services.js';
import { percentile } from '../lib/stats.js';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Events published through the shared publisher (default 1000). */
  events?: number;
  /** Events published through `POST /api/events` as well (default 3). */
  apiEvents?: number;
  /** Requests of the calls route answered 500 before it starts answering 200 (default 3). */
  failFirst?: number;
  /** Use running services at this URL instead of starting them (API_URL). */
  apiUrl?: string | undefined;
  /** DATABASE_URL of the services the demo starts (default: theirs, from the environment). */
  databaseUrl?: string;
  /** Called with delivered / expected as deliveries arrive. */
  onProgress?: (delivered: number, expected: number) => void;
  /** Give up waiting after this many ms (default 120 s). */
  timeoutMs?: number;
}

/** What the demo saw. */
export interface DemoSummary {
  ok: boolean;
  eventsPublished: number;
  deliveriesExpected: number;
  deliveriesConfirmed: number;
  /** Answers of 500 the client gave on purpose, each retried by the service. */
  retries: number;
  /** Deliveries the service gave up on. */
  failures: number;
  signatureFailures: number;
  duplicates: number;
  /** Publish → receipt, ms, over deliveries confirmed on their first attempt. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** The delivery log of one retried delivery, as the API returns it. */
  retriedDeliveryLog: unknown;
  /**
   * `webhook_deliveries_total` as the worker's `/metrics` counted them (succeeded, retry), when the
   * demo started the worker; null with API_URL.
   */
  workerMetrics: { succeeded: number; retry: number } | null;
}

const succeededSeries = 'webhook_deliveries_total{outcome="succeeded"}';
/** The demo publishes the calls and messages of the example catalogue, which its services load. */
const catalogue = loadCatalogue(exampleCatalogueFile);
const callTypes = catalogue.typesOfKind('calls');
const messageTypes = catalogue.typesOfKind('messages');

/** Runs the demo; services it starts are stopped before it returns. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoSummary> {
  const eventCount = options.events ?? 1000;
  const apiEventCount = options.apiEvents ?? 3;
  const failFirst = options.failFirst ?? 3;
  const jwtSecret = options.apiUrl
    ? process.env.JWT_SECRET || developmentJwtSecret
    : randomBytes(32).toString('hex');
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = options.apiUrl
    ? (process.env.QUEUE_PREFIX ?? 'webhooks')
    : `demo-${randomBytes(4).toString('hex')}`;
  const services: ServiceProcess[] = [];
  let apiUrl = options.apiUrl;
  let metricsUrl: string | undefined;
  if (apiUrl === undefined) {
    const port = await freePort();
    const healthPort = await freePort();
    metricsUrl = `http://127.0.0.1:${healthPort}/metrics`;
    const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      JWT_SECRET: jwtSecret,
      QUEUE_PREFIX: prefix,
      EVENT_CATALOGUE: exampleCatalogueFile,
      CALLBACK_ALLOW_PRIVATE: 'true',
      DELIVERY_BACKOFF_MS: '500',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '100000',
      WORKER_HEALTH_PORT: String(healthPort),
      ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    };
    services.push(startService('api', env), startService('worker', env));
    apiUrl = `http://127.0.0.1:${port}`;
  }
  // An internal service publishing a burst from a loop, as the publisher's `retry` is meant for: a
  // publish Redis did not take in time (a loaded machine) is tried again under the same event id.
  const publisher = createEventPublisher({
    redis: redisUrl,
    prefix,
    catalogue,
    retry: { limit: 5, maxWaitMs: 30_000 },
  });
  const account = `demo-${randomBytes(4).toString('hex')}`;
  const token = createTokenMinter({ secret: jwtSecret })(account);
  const client = createWebhookClient({ baseUrl: apiUrl, token });

  const secrets = new Map<string, string>();
  const published = new Map<string, number>();
  const latencies: number[] = [];
  let delivered = 0;
  const receiver = await startClientReceiver({
    secrets,
    failFirst: new Map([['/calls', failFirst]]),
    onReceipt: (receipt) => {
      delivered += 1;
      const sent = published.get(receipt.webhookId);
      if (sent !== undefined && !receiver.retried.has(`${receipt.route} ${receipt.webhookId}`))
        latencies.push(receipt.at - sent);
      options.onProgress?.(delivered, expected);
    },
  });
  let expected = 0;
  try {
    await waitUntilReady(apiUrl);
    const general = succeeded(
      await client.POST('/api/webhooks', { body: { callback_url: `${receiver.url}/all` } }),
    );
    const calls = succeeded(
      await client.POST('/api/webhooks/calls', {
        body: { callback_url: `${receiver.url}/calls`, webhook_id: 'crm-calls' },
      }),
    );
    secrets.set('/all', general.secret).set('/calls', calls.secret);

    const types: string[] = Array.from({ length: eventCount + apiEventCount }, (_, i) =>
      i % 2 === 0 ? callTypes[i % callTypes.length]! : messageTypes[i % messageTypes.length]!,
    );
    expected = types.length + types.filter((type) => type.startsWith('call.')).length;
    options.onProgress?.(0, expected);

    await Promise.all(
      types.slice(0, eventCount).map(async (type, i) => {
        const at = performance.timeOrigin + performance.now();
        const { id } = await publisher.publish({ accountId: account, type, data: demoData(type, i) });
        published.set(id, at);
      }),
    );
    for (const [i, type] of types.slice(eventCount).entries()) {
      const at = performance.timeOrigin + performance.now();
      // With a key, the client sends a publish the API refused for now (503, 429) again after
      // its Retry-After, as a client application should.
      const { id } = succeeded(
        await client.POST('/api/events', {
          body: { type, data: demoData(type, eventCount + i) },
          headers: { 'idempotency-key': `demo-${eventCount + i}` },
        }),
      );
      published.set(id, at);
    }

    // A timeout is reported by the summary (ok: false), not thrown.
    const timeoutMs = options.timeoutMs ?? 120_000;
    await waitFor('every delivery', () => delivered >= expected, timeoutMs).catch(() => undefined);
    // Anything arriving late would be a duplicate: give it a moment to show.
    await sleep(300);
    const scrape = async () => (metricsUrl === undefined ? null : (await fetch(metricsUrl)).text());
    // The worker counts a delivery once it has recorded it, a moment after the receipt.
    await waitFor(
      'the worker to count every delivery',
      async () =>
        prometheusSample((await scrape()) ?? '', succeededSeries) >= delivered || metricsUrl === undefined,
      timeoutMs,
    ).catch(() => undefined);

    const failed = await Promise.all(
      [general.id, calls.id].map(
        async (id) =>
          succeeded(
            await client.GET('/api/webhooks/{id}/deliveries', {
              params: { path: { id }, query: { status: 'failed', page_size: 1 } },
            }),
          ).count,
      ),
    );
    const retriedKey = [...receiver.retried][0];
    const retriedDeliveryLog = retriedKey
      ? await findDeliveryLog(client, calls.id, retriedKey.split(' ')[1]!)
      : null;
    const metrics = await scrape();
    for (const { id } of [general, calls]) {
      succeeded(await client.DELETE('/api/webhooks/{id}', { params: { path: { id } } }));
    }
    const failures = failed.reduce((a, b) => a + b, 0);
    return {
      ok:
        delivered === expected &&
        receiver.signatureFailures === 0 &&
        receiver.duplicates === 0 &&
        failures === 0,
      eventsPublished: types.length,
      deliveriesExpected: expected,
      deliveriesConfirmed: delivered,
      retries: receiver.failedOnPurpose,
      failures,
      signatureFailures: receiver.signatureFailures,
      duplicates: receiver.duplicates,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      retriedDeliveryLog,
      workerMetrics:
        metrics === null
          ? null
          : {
              succeeded: prometheusSample(metrics, succeededSeries),
              retry: prometheusSample(metrics, 'webhook_deliveries_total{outcome="retry"}'),
            },
    };
  } finally {
    await publisher.close();
    await receiver.close();
    await Promise.all(services.map((service) => service.stop()));
  }
}

/** Realistic content for an event of `type`. */
function demoData(type: string, i: number): Record<string, unknown> {
  if (type.startsWith('call.')) {
    return {
      call_id: `call-${i}`,
      from: '+15550100',
      to: '+15550199',
      direction: 'inbound',
      duration_s: i % 600,
    };
  }
  return {
    message_id: `msg-${i}`,
    from: '+15550123',
    to: '+15550456',
    body: `Your order #${1000 + i} has shipped`,
  };
}

/**
 * The answer of a call that succeeded.
 *
 * @throws Error with the problem details the API answered instead
 */
function succeeded<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    const { url, status } = result.response;
    throw new Error(`${url} answered ${status}: ${JSON.stringify(result.error)}`);
  }
  return result.data as T;
}

/** The delivery (with its attempts) of event `eventId` to subscription `subscriptionId`. */
async function findDeliveryLog(
  client: WebhookClient,
  subscriptionId: string,
  eventId: string,
): Promise<unknown> {
  for (let page = 1; ; page += 1) {
    const deliveries = succeeded(
      await client.GET('/api/webhooks/{id}/deliveries', {
        params: { path: { id: subscriptionId }, query: { page, page_size: 100 } },
      }),
    );
    const found = deliveries.results.find((delivery) => delivery.event_id === eventId);
    if (found) {
      return succeeded(
        await client.GET('/api/webhooks/{id}/deliveries/{delivery_id}', {
          params: { path: { id: subscriptionId, delivery_id: found.id } },
        }),
      );
    }
    if (deliveries.next === null) return null;
  }
}
