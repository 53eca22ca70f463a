/**
 * Configuration from environment variables, validated with TypeBox: each service's schema is built
 * from these pieces, every property with the `description` and `default` the README's table is checked against.
 */
import Type, { type Static, type TObject, type TProperties } from 'typebox';
import Value from 'typebox/value';
import { callbackPolicyEnv } from './callback-policy.js';
import type { Catalogue } from '@webhooks/publisher';
import { CatalogueError, exampleCatalogueFile, loadCatalogue } from '@webhooks/publisher';
import { logFormatEnv } from './logger-options.js';
import { ConfigError, configErrorLine } from '@webhooks/publisher';
import type { InFlightBounds } from './throttle.js';
import { redisEnv, redisSettingsFromEnv, type RedisSettings } from '@webhooks/publisher';

export { ConfigError, configErrorLine };

/** DATABASE_URL when none is set. */
export const defaultDatabaseUrl = 'postgresql://postgres@127.0.0.1:5432/webhooks';

/** Variables both services read. */
export const commonEnv = {
  ACCOUNT_OVERRIDES: Type.String({
    default: '',
    description:
      'Per-account settings as JSON, account id → `{"weight", "deliveries_per_second", "max_subscriptions", "payload_bytes_per_day"}`, each optional; `weight` (default 1) is the share of delivery capacity under contention',
  }),
  NODE_ENV: Type.String({
    default: 'production',
    description:
      '`development` or `test` relax the start-up security checks; any other value, unset included, is production',
  }),
  SECRETS_ENCRYPTION_KEY: Type.String({
    default: '',
    description:
      'Keys encrypting signing secrets at rest (AES-256-GCM): base64 of 32 bytes each, comma-separated, newest first; required in production',
  }),
  DATABASE_URL: Type.String({
    default: defaultDatabaseUrl,
    description: 'PostgreSQL connection URL; the database is created by `pnpm db:migrate` if missing',
  }),
  ...redisEnv,
  EVENT_CATALOGUE: Type.String({
    default: exampleCatalogueFile,
    minLength: 1,
    description:
      'The event catalogue file (YAML or JSON; a path, relative to the working directory): kinds, event types, their JSON Schemas and examples (docs/event-catalogue.md); both services must load the same file',
  }),
  QUEUE_PREFIX: Type.String({
    default: 'webhooks',
    minLength: 1,
    description:
      'Redis key prefix of the BullMQ queues; services that work together must share it (`{…}` is added on a Redis Cluster)',
  }),
  QUEUE_SHARDS: Type.Integer({
    default: 1,
    minimum: 1,
    maximum: 1_024,
    description:
      "Sets of event and delivery queues, each under its own hash tag, so that a Redis Cluster spreads them over its masters (about 2 per master); an account's fan-outs go to one shard, a subscription's deliveries to one. 1 keeps every key under QUEUE_PREFIX. Services that work together must share it; to change it, see docs/operations.md",
  }),
  HOST: Type.String({
    default: '127.0.0.1',
    description: 'Listen address of the API and of the worker health endpoint',
  }),
  PUBLIC_BASE_URL: Type.String({
    default: '',
    pattern: '^$|^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
    description:
      'Absolute http(s) URL clients reach the API at (e.g. `https://hooks.example.com`): `resource_uri`, `Location`, page links and the OpenAPI `servers` entry use it; when empty, links are paths and `servers` is `http://HOST:PORT`',
  }),
  METRICS_TOKEN: Type.String({
    default: '',
    description:
      'When set, `/metrics` (Prometheus) requires it as a bearer token or Basic password; open when empty. Required outside development and test, at least 32 characters (`openssl rand -hex 16`)',
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info', description: 'pino log level' },
  ),
  ...callbackPolicyEnv,
  ...logFormatEnv,
  DELIVERY_MAX_ATTEMPTS: Type.Integer({
    default: 5,
    minimum: 1,
    maximum: 25,
    description: 'Attempts per delivery, the first included, before it is given up',
  }),
  SUBSCRIPTION_MAX_IN_FLIGHT: Type.Integer({
    default: 10,
    minimum: 1,
    maximum: 1000,
    description:
      'Attempts to one subscription in flight at once across all workers, where every subscription starts; one that times out gets fewer, down to 1, and one whose callback answers 200 without slowing down earns more, up to SUBSCRIPTION_IN_FLIGHT_CEILING',
  }),
  SUBSCRIPTION_IN_FLIGHT_CEILING: Type.Integer({
    default: 100,
    minimum: 1,
    maximum: 1000,
    description:
      'Most attempts to one subscription in flight at once that a fast, healthy callback earns (at least SUBSCRIPTION_MAX_IN_FLIGHT; equal to it, nothing is earned)',
  }),
};

/**
 * The in-flight bounds of every subscription.
 * @throws ConfigError when SUBSCRIPTION_IN_FLIGHT_CEILING is below SUBSCRIPTION_MAX_IN_FLIGHT
 */
export function inFlightBoundsFromEnv(config: {
  SUBSCRIPTION_MAX_IN_FLIGHT: number;
  SUBSCRIPTION_IN_FLIGHT_CEILING: number;
}): InFlightBounds {
  if (config.SUBSCRIPTION_IN_FLIGHT_CEILING < config.SUBSCRIPTION_MAX_IN_FLIGHT) {
    throw new ConfigError(
      `Invalid environment variable SUBSCRIPTION_IN_FLIGHT_CEILING=${config.SUBSCRIPTION_IN_FLIGHT_CEILING}: it must be at least SUBSCRIPTION_MAX_IN_FLIGHT (${config.SUBSCRIPTION_MAX_IN_FLIGHT})`,
    );
  }
  return { base: config.SUBSCRIPTION_MAX_IN_FLIGHT, ceiling: config.SUBSCRIPTION_IN_FLIGHT_CEILING };
}

/** Whether `nodeEnv` relaxes start-up security checks: only `development` and `test`; unset is production. */
export function isDevelopmentEnv(nodeEnv: string): boolean {
  return nodeEnv === 'development' || nodeEnv === 'test';
}

/**
 * Reads `env` through `schema`: defaults, string conversion, unknown variables dropped, validation.
 * @throws ConfigError naming the first invalid variable, its value and what was expected
 */
export function loadConfig<P extends TProperties>(
  schema: TObject<P>,
  env: Record<string, string | undefined>,
): Static<TObject<P>> {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(schema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const value = Value.Convert(schema, Value.Default(schema, raw));
  const [error] = Value.Errors(schema, value);
  if (error !== undefined) {
    const name = error.instancePath.replace(/^\//, '') || String(Object.values(error.params)[0] ?? '');
    const property = schema.properties[name] as { description?: string } | undefined;
    throw new ConfigError(
      `Invalid environment variable ${name}=${JSON.stringify(raw[name])}: ${error.message}` +
        (property?.description ? ` (${property.description})` : ''),
    );
  }
  return value as Static<TObject<P>>;
}

/**
 * {@link RedisSettings} from `env` as a service reads them, for tools on a running service's Redis.
 * @throws ConfigError as {@link loadConfig} and {@link redisSettingsFromEnv}
 */
export function redisSettingsOfEnv(env: Record<string, string | undefined>): RedisSettings {
  const { QUEUE_PREFIX, QUEUE_SHARDS } = commonEnv;
  return redisSettingsFromEnv(loadConfig(Type.Object({ ...redisEnv, QUEUE_PREFIX, QUEUE_SHARDS }), env));
}

/** Variables whose value is a secret, by name (JWT_SECRET, SECRETS_ENCRYPTION_KEY, METRICS_TOKEN…). */
const secretVariable = /SECRET|TOKEN|PASSWORD|ENCRYPTION_KEY/;
/** The password of a URL's user information (RFC 3986 section 3.2.1) within a longer text. */
const embeddedUrlPassword = /([a-z][a-z0-9+.-]*:\/\/[^\s/:@"]*:)[^\s/@"]+@/gi;

/** Each variable's value for the start-up log line: secrets and URL passwords (even inside JSON) redacted. */
export function redactedConfig(schema: TObject, config: object): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const name of Object.keys(schema.properties)) {
    const value: unknown = (config as Record<string, unknown>)[name];
    if (secretVariable.test(name)) shown[name] = value === '' ? '' : 'redacted';
    else if (typeof value === 'string' && /^[a-z]+:\/\/[^/]*:[^/]*@/i.test(value)) {
      const url = new URL(value);
      url.password = 'redacted';
      shown[name] = url.toString();
    } else if (typeof value === 'string') shown[name] = value.replace(embeddedUrlPassword, '$1redacted@');
    else shown[name] = value;
  }
  return shown;
}

/** Loads EVENT_CATALOGUE's catalogue. @throws ConfigError naming EVENT_CATALOGUE, the file, the place and why */
export function catalogueFromEnv(config: { EVENT_CATALOGUE: string }): Catalogue {
  try {
    return loadCatalogue(config.EVENT_CATALOGUE);
  } catch (error) {
    if (error instanceof CatalogueError) {
      throw new ConfigError(`Invalid environment variable EVENT_CATALOGUE: ${error.message}`);
    }
    throw error;
  }
}
