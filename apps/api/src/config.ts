/** The API service's configuration, from the environment (docs/configuration.md). */
import Type, { type Static } from 'typebox';
import {
  catalogueFromEnv,
  commonEnv,
  ConfigError,
  isDevelopmentEnv,
  loadConfig,
  parseAccountOverrides,
  parseCallbackPolicy,
  requireMetricsToken,
  tracingRequested,
  edgeSamplingOf,
  type EdgeSampling,
  redisSettingsFromEnv,
  inFlightBoundsFromEnv,
  type InFlightBounds,
  secretBoxFromEnv,
  type AccountOverride,
  type CallbackPolicy,
  type Catalogue,
  type RedisSettings,
  type SecretBox,
  transformationEnv,
  destinationEnv,
  relayEnv,
  parseDestinationBrokers,
  type BrokerConfig,
  type TokenUrlRules,
} from '@webhooks/shared';
import { parseTrustProxy, type TrustProxy } from './lib/client-address.js';

/** Development-only JWT secret, used (with a warning) when JWT_SECRET is unset outside production. */
export const developmentJwtSecret = 'development-only-secret-do-not-use-in-production!';

/** RECOVER_ROUNDS_PER_MINUTE's default: an account's recovery sends 166 deliveries a second. */
export const defaultRecoverRoundsPerMinute = 10_000;

/** Environment variables of the API service. */
export const apiEnvSchema = Type.Object({
  ...commonEnv,
  ...transformationEnv,
  ...destinationEnv,
  ...relayEnv,
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535, description: 'API listen port' }),
  JWT_SECRET: Type.String({
    default: '',
    description:
      'HS256 secret of the bearer tokens, at least 32 bytes; required outside NODE_ENV development and test unless JWT_PUBLIC_KEY is set',
  }),
  JWT_PUBLIC_KEY: Type.String({
    default: '',
    description:
      'PEM public key: when set, tokens are verified with it (JWT_ALGORITHM) instead of JWT_SECRET',
  }),
  JWT_ALGORITHM: Type.Union([Type.Literal('RS256'), Type.Literal('ES256')], {
    default: 'RS256',
    description: 'Algorithm of JWT_PUBLIC_KEY tokens',
  }),
  JWT_ISSUER: Type.String({
    default: '',
    description:
      'When set, a token must carry this `iss` claim; required with JWT_PUBLIC_KEY outside NODE_ENV development and test',
  }),
  JWT_AUDIENCE: Type.String({
    default: '',
    description:
      'When set, a token must carry this `aud` claim (or list it); required with JWT_PUBLIC_KEY outside NODE_ENV development and test',
  }),
  JWT_MAX_AGE_SECONDS: Type.Integer({
    default: 86_400,
    minimum: 60,
    description:
      'Longest a token is accepted after its `iat` claim, in seconds, whatever its `exp`; tokens must carry `iat`',
  }),
  MAX_SUBSCRIPTIONS_PER_ACCOUNT: Type.Integer({
    default: 100,
    minimum: 1,
    description:
      'Subscriptions one account may have, unless ACCOUNT_OVERRIDES says otherwise; creating one more answers 409 (bounds fan-out per event)',
  }),
  ACCOUNT_PAYLOAD_BYTES_PER_DAY: Type.Integer({
    default: 1_073_741_824,
    minimum: 1,
    description:
      'Bytes of event `data` (serialized JSON) the API accepts from one account per UTC day, unless ACCOUNT_OVERRIDES says otherwise; past it, `POST /api/events` answers 429 with `Retry-After` until midnight UTC',
  }),
  ADMIN_PORT: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 65535,
    description:
      'When set, `/metrics` and the queue dashboard are served on this port (on HOST) instead of the API port, for a network clients cannot reach; 0: on the API port',
  }),
  ADMIN_TOKEN: Type.String({
    default: '',
    description:
      'When set, the queue dashboard is served at `/admin/queues` to this token (bearer or Basic password); off when empty. Outside development and test, at least 32 characters',
  }),
  PORTAL_LINK_SECONDS: Type.Integer({
    default: 300,
    minimum: 10,
    maximum: 3_600,
    description:
      'How long a portal link can be opened, in seconds; it is exchanged once for its session, whose own lifetime the minting request chooses',
  }),
  PORTAL_FRAME_ANCESTORS: Type.String({
    default: "'self'",
    pattern: '^[^;,]+$',
    description:
      "Who may embed the portal in a frame: CSP `frame-ancestors` sources, space-separated (`'self' https://dashboard.example.com`; `'none'` for nobody)",
  }),
  TRUST_PROXY: Type.String({
    default: 'false',
    description:
      'The proxies in front whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed (client addresses for the per-IP limits, HSTS on answers the client got over TLS): `false`, the number of proxies (such as `1`), or their addresses and CIDR ranges, comma-separated. `true` is refused: it believes the left-most address, which clients write',
  }),
  OAUTH_TOKEN_HOSTS: Type.String({
    default: '',
    description:
      "With CALLBACK_VERIFICATION=challenge, the hosts an OAuth 2.0 `token_url` may be on besides its callback's origin, comma-separated (`login.example.com`, `*.auth0.com`)",
  }),
  PORTAL_SECRET: Type.String({
    default: '',
    description:
      'HS256 key (at least 32 bytes) of portal session tokens; when empty, derived from JWT_SECRET, and portal sessions are off with JWT_PUBLIC_KEY',
  }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({
    default: 5_000,
    minimum: 100,
    description:
      "PostgreSQL's statement_timeout on the API's queries, in ms; a query past it answers 503 with `Retry-After`",
  }),
  IDEMPOTENCY_STORE: Type.Union([Type.Literal('redis'), Type.Literal('postgresql')], {
    default: 'redis',
    description:
      '`postgresql`: idempotency keys of published events are also kept in PostgreSQL (unique per account and key), so a Redis failover cannot lose them; `redis`: in the queue only',
  }),
  OPEN_REQUESTS_PER_MINUTE_PER_IP: Type.Integer({
    default: 600,
    minimum: 1,
    description:
      'Requests a minute from one IP address to the routes without a token (health, readiness, documentation, portal files, unknown paths), shared by all API instances through Redis',
  }),
  AUTH_FAILURES_PER_MINUTE_PER_IP: Type.Integer({
    default: 30,
    minimum: 1,
    description:
      'Failed authentications a minute from one IP address; past it the address gets 429 on every account route until the minute ends',
  }),
  RATE_LIMIT_PER_MINUTE: Type.Integer({
    default: 600,
    minimum: 1,
    description: 'Requests a minute per authenticated account, shared by all API instances through Redis',
  }),
  API_DOCS: Type.Boolean({
    default: true,
    description:
      'Serve the OpenAPI document at `/docs/json` and Swagger UI at `/docs`, without a token; `false` answers 404 there, for an installation that keeps its API description private',
  }),
  API_MAX_CONNECTIONS: Type.Integer({
    default: 0,
    minimum: 0,
    description:
      "Client connections the API holds at once; past it a new connection is closed at once, so that a spike cannot take the descriptors its requests need. 0: three quarters of the process's open-file limit (`ulimit -n`)",
  }),
  API_SHED_EVENT_LOOP_DELAY_MS: Type.Integer({
    default: 500,
    minimum: 0,
    description:
      "How late the API process's event loop may run, in ms, before publishing and other costly requests answer 503 with `Retry-After` at once instead of queueing inside the process; shedding stops once it is back under half; 0: not measured",
  }),
  API_SHED_MAX_FANOUT_WAIT_MS: Type.Integer({
    default: 500,
    minimum: 0,
    description:
      'How long the oldest event waiting for its fan-out may have waited, in ms, before publishing and other costly requests of accounts over their share are shed the same way (sampled every 250 ms); shedding stops once it is back under half; 0: not measured',
  }),
  API_SHED_MAX_IN_FLIGHT: Type.Integer({
    default: 512,
    minimum: 0,
    description:
      'Publishing and other costly requests one API process holds at once; past it, those of accounts over their share answer 503 with `Retry-After` at once, so that a burst of thousands is not admitted together; 0: no bound',
  }),
  API_SHED_MAX_WAIT_MS: Type.Integer({
    default: 500,
    minimum: 0,
    description:
      'How long the oldest publishing or other costly request still in flight may have waited, in ms, before such requests are shed the same way; shedding stops once it is back under half; 0: not measured',
  }),
  RECOVER_ROUNDS_PER_MINUTE: Type.Integer({
    default: defaultRecoverRoundsPerMinute,
    minimum: 1,
    description:
      "Deliveries the recover calls of one account may send again a minute, all its subscriptions together, and the pace they are started and sent at: spent in windows of a second (or of two rounds, under 120 a minute), each window's rounds sent evenly over it, so a recovery leaves room for live deliveries; a call past the current window answers 429 with `Retry-After`. Recover calls also count against RATE_LIMIT_PER_MINUTE",
  }),
  BACKLOG_MAX_EVENTS: Type.Integer({
    default: 100_000,
    minimum: 0,
    description:
      'Events accepted and not yet fanned out (the `events` queue) past which `POST /api/events` answers 503 with `Retry-After` instead of accepting more; 0: no bound',
  }),
  BACKLOG_MAX_DELIVERIES: Type.Integer({
    default: 1_000_000,
    minimum: 0,
    description:
      'Deliveries waiting for their account’s turn, for a worker, or in the delayed set for a retry or a gate (the account scheduler and the `deliveries` queue) past which `POST /api/events` answers 503 with `Retry-After`; 0: no bound',
  }),
});

/** The OpenAPI `servers` address: PUBLIC_BASE_URL, else `http://HOST:PORT` (wildcard as localhost, IPv6 bracketed). */
export function apiServerUrl(config: Pick<ApiConfig, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>): string {
  if (config.PUBLIC_BASE_URL !== '') return config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
}

/** Fewest bytes of an HS256 JWT_SECRET (RFC 7518 section 3.2: a key at least as long as the hash). */
export const minJwtSecretBytes = 32;

/** The API's configuration after defaults and validation. */
export type ApiConfig = Static<typeof apiEnvSchema> &
  RedisSettings & {
    /** The verification key in force: JWT_PUBLIC_KEY, JWT_SECRET or the development secret. */
    jwtKey: { algorithm: 'HS256' | 'RS256' | 'ES256'; key: string };
    /** Set when the development secret is in use: the text of the warning to log. */
    jwtWarning?: string;
    /** Encryption of signing secrets at rest (SECRETS_ENCRYPTION_KEY). */
    secretBox: SecretBox;
    /** SUBSCRIPTION_MAX_IN_FLIGHT and SUBSCRIPTION_IN_FLIGHT_CEILING: where each subscription's in-flight limit starts and how far it may rise. */
    inFlightBounds: InFlightBounds;
    /** ACCOUNT_OVERRIDES as account → its settings. */
    accountOverrides: ReadonlyMap<string, AccountOverride>;
    /** The event catalogue of EVENT_CATALOGUE, checked and compiled. */
    catalogue: Catalogue;
    /** Where callbacks may point. */
    callbackPolicy: CallbackPolicy;
    /** Whether the standard OTEL_* variables ask for traces. */
    tracing: boolean;
    /** The ratio of the traces OTEL_TRACES_SAMPLER samples, when it samples one (`edgeSamplingOf`). */
    edgeSampling: EdgeSampling | undefined;
    /** TRUST_PROXY as Fastify's `trustProxy` (lib/client-address.ts). */
    trustProxy: TrustProxy;
    /** Where an OAuth 2.0 token URL may point (NODE_ENV, CALLBACK_VERIFICATION, OAUTH_TOKEN_HOSTS). */
    tokenUrlRules: TokenUrlRules;
    /** DESTINATION_BROKERS by name: what a subscription's `destination` may name. */
    brokers: ReadonlyMap<string, BrokerConfig>;
  };

/**
 * Reads and validates the API configuration from `env` (default `process.env`).
 * @throws ConfigError naming the variable: outside development and test, JWT_SECRET must be set, ≥ 32
 *   bytes and not the development secret, unless JWT_PUBLIC_KEY (then JWT_ISSUER and JWT_AUDIENCE);
 *   SECRETS_ENCRYPTION_KEY and METRICS_TOKEN must be set
 */
export function loadApiConfig(env: Record<string, string | undefined> = process.env): ApiConfig {
  const config = readApiConfig(env);
  requireMetricsToken(config);
  return config;
}

function readApiConfig(env: Record<string, string | undefined>): ApiConfig {
  const config = loadConfig(apiEnvSchema, env);
  const secretBox = secretBoxFromEnv(config);
  if (config.PORTAL_SECRET !== '' && Buffer.byteLength(config.PORTAL_SECRET) < minJwtSecretBytes) {
    throw new ConfigError(
      `Invalid environment variable PORTAL_SECRET: it must be at least ${minJwtSecretBytes} bytes`,
    );
  }
  const base = {
    ...config,
    ...redisSettingsFromEnv(config),
    secretBox,
    inFlightBounds: inFlightBoundsFromEnv(config),
    accountOverrides: parseAccountOverrides(config.ACCOUNT_OVERRIDES),
    catalogue: catalogueFromEnv(config),
    callbackPolicy: parseCallbackPolicy(config),
    tracing: tracingRequested(env),
    edgeSampling: edgeSamplingOf(env),
    trustProxy: parseTrustProxy(config.TRUST_PROXY),
    tokenUrlRules: {
      httpsOnly: !isDevelopmentEnv(config.NODE_ENV),
      verifiedOrigin: config.CALLBACK_VERIFICATION === 'challenge',
      allowedHosts: config.OAUTH_TOKEN_HOSTS.split(',')
        .map((host) => host.trim().toLowerCase())
        .filter((host) => host !== ''),
    },
    brokers: parseDestinationBrokers(config.DESTINATION_BROKERS),
  };
  const development = isDevelopmentEnv(config.NODE_ENV);
  const productionRule = `outside NODE_ENV development or test (NODE_ENV is ${JSON.stringify(config.NODE_ENV)})`;
  if (config.JWT_PUBLIC_KEY !== '') {
    // Without iss and aud, a token the provider issued for another service would open this API (RFC 8725 §3.9).
    const missing = ['JWT_ISSUER', 'JWT_AUDIENCE'].filter((name) => config[name as 'JWT_ISSUER'] === '');
    if (missing.length > 0 && !development)
      throw new ConfigError(
        `Missing environment variable ${missing.join(' and ')}: required with JWT_PUBLIC_KEY ${productionRule}`,
      );
    return { ...base, jwtKey: { algorithm: config.JWT_ALGORITHM, key: config.JWT_PUBLIC_KEY } };
  }
  if (config.JWT_SECRET !== '') {
    if (Buffer.byteLength(config.JWT_SECRET) < minJwtSecretBytes) {
      throw new ConfigError(
        `Invalid environment variable JWT_SECRET: it must be at least ${minJwtSecretBytes} bytes`,
      );
    }
    if (config.JWT_SECRET === developmentJwtSecret && !development) {
      throw new ConfigError(
        `Invalid environment variable JWT_SECRET: the public development secret is refused ${productionRule}`,
      );
    }
    return { ...base, jwtKey: { algorithm: 'HS256', key: config.JWT_SECRET } };
  }
  if (!development) {
    throw new ConfigError(
      `Missing environment variable JWT_SECRET (or JWT_PUBLIC_KEY): required ${productionRule}`,
    );
  }
  return {
    ...base,
    jwtKey: { algorithm: 'HS256', key: developmentJwtSecret },
    jwtWarning:
      'JWT_SECRET is not set: using the public development secret. Anyone can mint tokens; never run like this in production.',
  };
}
