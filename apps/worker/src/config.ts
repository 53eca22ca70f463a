/** The delivery worker's configuration, from the environment (docs/configuration.md). */
import { X509Certificate } from 'node:crypto';
import { promises as dns } from 'node:dns';
import { readFileSync } from 'node:fs';
import Type, { type Static } from 'typebox';
import {
  catalogueFromEnv,
  commonEnv,
  ConfigError,
  loadConfig,
  parseAccountOverrides,
  parseCallbackPolicy,
  parseShardList,
  requireMetricsToken,
  tracingRequested,
  redisSettingsFromEnv,
  inFlightBoundsFromEnv,
  breakerEnv,
  breakerOptionsFromEnv,
  type BreakerOptions,
  type InFlightBounds,
  secretBoxFromEnv,
  splitList,
  type AccountOverride,
  type CallbackPolicy,
  type Catalogue,
  type QueueShards,
  type RedisSettings,
  type SecretBox,
  transformationEnv,
  destinationEnv,
  relayEnv,
  parseDestinationBrokers,
  type BrokerConfig,
} from '@webhooks/shared';
import { heapLimitEnv } from './heap-limit.js';

/** Environment variables of the worker service. */
export const workerEnvSchema = Type.Object({
  ...commonEnv,
  ...heapLimitEnv,
  ...transformationEnv,
  ...destinationEnv,
  ...relayEnv,
  ...breakerEnv,
  WORKER_CONCURRENCY: Type.Integer({
    default: 50,
    minimum: 1,
    maximum: 1000,
    description:
      'Deliveries a worker process sends at once from each queue shard it consumes (QUEUE_SHARDS, WORKER_SHARDS); the first attempts it sends inline, outside any job, share one budget of this size',
  }),
  WORKER_WATCHDOG_MS: Type.Integer({
    default: 60_000,
    minimum: 0,
    description:
      'How long a queue consumer may leave waiting jobs untaken while it has free slots, in ms, before it is closed and started again (a wedged blocking connection); 0: no watchdog',
  }),
  DELIVERY_TIMEOUT_MS: Type.Integer({
    default: 10_000,
    minimum: 100,
    maximum: 120_000,
    description: 'Time allowed for one delivery request, connect to last byte, in ms',
  }),
  DELIVERY_BACKOFF_MS: Type.Integer({
    default: 60_000,
    minimum: 1,
    description:
      'Wait after the first failed attempt, in ms; doubles after each further failure, stretched by a `Retry-After` answer',
  }),
  DNS_SERVERS: Type.String({
    default: '',
    description:
      'Comma-separated DNS servers (`host` or `host:port`) that resolve callback hosts; the system ones when empty',
  }),
  DELIVERY_PROXY_URL: Type.String({
    default: '',
    description:
      'HTTP forward proxy every delivery and challenge goes through (`http://host:port`, credentials in the URL; a CONNECT tunnel per connection), so that callbacks see its source addresses; the proxy must refuse private ranges itself (docs/security.md); none when empty',
  }),
  CALLBACK_CA_FILE: Type.String({
    default: '',
    description:
      "PEM file of certificate authorities trusted for callbacks' TLS beside Node's bundled ones (receivers on a private PKI); none when empty",
  }),
  DNS_TIMEOUT_MS: Type.Integer({
    default: 2_000,
    minimum: 100,
    maximum: 60_000,
    description: 'Time allowed for one DNS query of a callback host (two tries), in ms',
  }),
  DATABASE_GENERIC_PLANS: Type.Boolean({
    default: true,
    description:
      "The worker's delivery path asks PostgreSQL to plan each of its named statements once (`plan_cache_mode=force_generic_plan` at connection start) instead of for each run's parameters. Behind PgBouncer (1.20 or later) add `plan_cache_mode` to its `track_extra_parameters`, or set `false`",
  }),
  SUBSCRIPTION_DISABLE_AFTER: Type.Integer({
    default: 5,
    minimum: 1,
    description: 'Deliveries failed for good in a row after which the subscription is disabled',
  }),
  DELIVERY_MAX_AGE: Type.Integer({
    default: 3 * 24 * 3600,
    minimum: 1,
    description:
      'Seconds after which a delivery not yet sent (its round started that long ago) is given up as `expired`; until then PostgreSQL or Redis faults only postpone it',
  }),
  RECONCILE_INTERVAL_MS: Type.Integer({
    default: 60_000,
    minimum: 100,
    description:
      'How often the reconciler re-drives stranded deliveries and fan-outs (once across all workers), in ms',
  }),
  RECONCILE_GRACE_MS: Type.Integer({
    default: 300_000,
    minimum: 0,
    description:
      'How far past its `next_attempt_at` a pending delivery must be, in ms, before the reconciler looks for its job',
  }),
  RETENTION_DAYS: Type.Integer({
    default: 30,
    minimum: 1,
    description:
      'Days events, deliveries and attempts are kept: checked hourly, each day of the delivery log is dropped whole once it is this old, so rows stay up to one day longer',
  }),
  DELIVERY_QUEUE_TARGET: Type.Integer({
    default: 100,
    minimum: 1,
    maximum: 100_000,
    description:
      "First deliveries kept waiting in the shared `deliveries` queue; the rest wait in their account's list for its fair turn. About the worker slots of all workers together: lower shortens a quiet account's wait behind a flood, too low leaves slots idle",
  }),
  HOST_MAX_IN_FLIGHT: Type.Integer({
    default: 200,
    minimum: 1,
    maximum: 100_000,
    description:
      'Attempts in flight to one callback host at most (counted by registrable domain, or by address for an IP literal), across all subscriptions, accounts and workers, so that the service cannot flood a third party; more wait without using an attempt. Split evenly over QUEUE_SHARDS (at least 1 per shard)',
  }),
  DELIVERY_INLINE_DEADLINE_MS: Type.Integer({
    default: 250,
    minimum: 1,
    maximum: 60_000,
    description:
      'How long a fan-out waits for its inline attempts, in ms; a slower one is finished and recorded in the background, so a slow callback never holds the fan-out',
  }),
  ACCOUNT_DELIVERIES_PER_SECOND: Type.Integer({
    default: 5_000,
    minimum: 1,
    maximum: 1_000_000,
    description:
      "Deliveries of one account admitted a second at most, across all workers; more wait in the account's list (delayed, never refused, no attempt used). The default is above what one 2-core host delivers, so that an account alone can use it; fairness under contention comes from the round robin, not from this cap",
  }),
  WORKER_QUEUES: Type.String({
    default: 'events,deliveries',
    description:
      'Queues this process consumes, comma-separated: `events` (fan-out) and/or `deliveries` (attempts); every process also runs the scheduled reconciler and retention, once across all',
  }),
  WORKER_SHARDS: Type.String({
    default: '',
    description:
      'Queue shards this process consumes (QUEUE_SHARDS), as numbers and ranges such as `0-3,6`; empty for every shard',
  }),
  QUEUE_SHARDS_DRAIN: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 1_024,
    description:
      'While QUEUE_SHARDS changes: the previous value, whose shards this process also consumes until they are empty (docs/operations.md, "Changing QUEUE_SHARDS"); 0 when not changing',
  }),
  WORKER_HEALTH_PORT: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 65535,
    description: 'Port of the worker health endpoint (/healthz, /readyz) on HOST; 0 turns it off',
  }),
});

/** The worker's configuration after defaults and validation. */
export type WorkerConfig = Static<typeof workerEnvSchema> &
  RedisSettings & {
    /** Opens the signing secrets stored sealed (SECRETS_ENCRYPTION_KEY). */
    secretBox: SecretBox;
    /** DNS_SERVERS as a list; empty for the system's. */
    dnsServers: string[];
    /** DELIVERY_PROXY_URL, or undefined. */
    proxyUrl: string | undefined;
    /** The certificate authorities of CALLBACK_CA_FILE (PEM), or undefined. */
    callbackCertificateAuthorities: string | undefined;
    /** WORKER_QUEUES as a set. */
    roles: ReadonlySet<WorkerRole>;
    /** WORKER_SHARDS: the shard numbers of `shards` this process consumes. */
    workerShards: number[];
    /** QUEUE_SHARDS_DRAIN's layout, whose shards this process drains; null when 0. */
    drainShards: QueueShards | null;
    /** SUBSCRIPTION_MAX_IN_FLIGHT and SUBSCRIPTION_IN_FLIGHT_CEILING: where each subscription's in-flight limit starts and how far it may rise. */
    inFlightBounds: InFlightBounds;
    /** BREAKER_*: when a subscription's circuit breaker opens, and for how long. */
    breaker: BreakerOptions;
    /** ACCOUNT_OVERRIDES as account → its settings. */
    accountOverrides: ReadonlyMap<string, AccountOverride>;
    /** The event catalogue of EVENT_CATALOGUE, checked and compiled. */
    catalogue: Catalogue;
    /** Where callbacks may point. */
    callbackPolicy: CallbackPolicy;
    /** Whether the standard OTEL_* variables ask for traces. */
    tracing: boolean;
    /** DESTINATION_BROKERS by name: the brokers the worker publishes to. */
    brokers: ReadonlyMap<string, BrokerConfig>;
  };

/** A queue a worker process may consume (WORKER_QUEUES). */
export type WorkerRole = 'events' | 'deliveries';

const workerRoles: readonly WorkerRole[] = ['events', 'deliveries'];

/** WORKER_QUEUES as a set. @throws ConfigError for an empty list or an unknown queue. */
function parseRoles(value: string): Set<WorkerRole> {
  const names = splitList(value);
  const unknown = names.find((name) => !workerRoles.includes(name as WorkerRole));
  if (names.length === 0 || unknown !== undefined) {
    const problem = unknown === undefined ? 'empty' : `unknown queue ${JSON.stringify(unknown)}`;
    throw new ConfigError(
      `Invalid environment variable WORKER_QUEUES=${JSON.stringify(value)}: ${problem} (one or both of ${workerRoles.join(', ')}, comma-separated)`,
    );
  }
  return new Set(names as WorkerRole[]);
}

/** DELIVERY_PROXY_URL checked. @throws ConfigError when it is not an http(s) URL */
function parseProxyUrl(value: string): string | undefined {
  if (value === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new ConfigError(
      'Invalid environment variable DELIVERY_PROXY_URL: not an http(s) URL (http://host:port, credentials in the URL)',
    );
  return value;
}

/** CALLBACK_CA_FILE's certificates (PEM). @throws ConfigError when it cannot be read or holds none */
function readCertificateAuthorities(file: string): string | undefined {
  if (file === '') return undefined;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
    new X509Certificate(pem);
  } catch (error) {
    throw new ConfigError(
      `Invalid environment variable CALLBACK_CA_FILE=${JSON.stringify(file)}: ${(error as Error).message} (a readable PEM file of one or more certificates)`,
    );
  }
  return pem;
}

/** DNS_SERVERS split and checked the way the resolver will read it. */
function parseDnsServers(value: string): string[] {
  const servers = splitList(value);
  try {
    new dns.Resolver().setServers(servers);
  } catch (error) {
    throw new ConfigError(
      `Invalid environment variable DNS_SERVERS=${JSON.stringify(value)}: ${(error as Error).message} (IP addresses, optionally with :port, comma-separated)`,
    );
  }
  return servers;
}

/**
 * Reads and validates the worker configuration from `env` (default `process.env`).
 * @throws ConfigError naming the variable: outside development and test SECRETS_ENCRYPTION_KEY and
 *   METRICS_TOKEN are required and CALLBACK_ALLOW_PRIVATE refused; DNS_SERVERS must be IP addresses
 */
export function loadWorkerConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  const config = loadConfig(workerEnvSchema, env);
  const worker = {
    ...config,
    ...redisSettingsFromEnv(config),
    secretBox: secretBoxFromEnv(config),
    inFlightBounds: inFlightBoundsFromEnv(config),
    breaker: breakerOptionsFromEnv(config),
    dnsServers: parseDnsServers(config.DNS_SERVERS),
    callbackCertificateAuthorities: readCertificateAuthorities(config.CALLBACK_CA_FILE),
    proxyUrl: parseProxyUrl(config.DELIVERY_PROXY_URL),
    roles: parseRoles(config.WORKER_QUEUES),
    workerShards: parseShardList(config.WORKER_SHARDS, config.QUEUE_SHARDS),
    drainShards:
      config.QUEUE_SHARDS_DRAIN === 0
        ? null
        : redisSettingsFromEnv({ ...config, QUEUE_SHARDS: config.QUEUE_SHARDS_DRAIN }).shards,
    accountOverrides: parseAccountOverrides(config.ACCOUNT_OVERRIDES),
    catalogue: catalogueFromEnv(config),
    callbackPolicy: parseCallbackPolicy(config),
    tracing: tracingRequested(env),
    brokers: parseDestinationBrokers(config.DESTINATION_BROKERS),
  };
  requireMetricsToken(worker);
  return worker;
}
