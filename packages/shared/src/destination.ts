/**
 * Destinations: `http` (the callback URL), `rabbitmq` (an exchange and routing key), `nats` (a
 * JetStream subject) or an AWS service (`aws-destination.ts`) on a broker of DESTINATION_BROKERS,
 * stored as a URI in `callback_url`. AMQP names ≤ 255 bytes (AMQP 0-9-1, 4.2.5.3); a NATS publish
 * names no wildcard (docs.nats.io, "Subjects").
 */
import Type from 'typebox';
import { ConfigError } from '@webhooks/publisher';
import {
  awsDestinationUrl,
  awsDestinationView,
  awsTargetOf,
  checkAwsDestination,
  isAwsType,
  type AwsDestinationInput,
  type AwsTarget,
  type AwsType,
  type DestinationProblem,
} from './aws-destination.js';
import { relaySession } from './relay.js';

/** The environment variable of destinations, read by the API and the worker. */
export const destinationEnv = {
  DESTINATION_BROKERS: Type.String({
    default: '',
    description:
      'Brokers subscriptions may deliver to, as JSON: broker name (lower-case letters, digits, `-`) to `{"type": "rabbitmq", "url": "amqp://user:password@host:5672/vhost"}`, `{"type": "nats", "url": "nats://host:4222"}` or `{"type": "aws", "region": "eu-west-1"}` (SQS, SNS, EventBridge, Kinesis and S3; credentials from the AWS SDK\'s default chain: environment, web identity, instance role; `"endpoint"` for another endpoint), with `"accounts": [...]` to let only those accounts name it, `"exchange_prefix"` or `"subject_prefix"` to confine names, and `"allow_reserved_exchanges": true` to allow RabbitMQ\'s `\'\'` and `amq.*`, `"require_customer_credentials": true` to let an aws entry write only with the credentials a subscription names; a subscription names one in its `destination`. Empty: HTTP callbacks only',
  }),
};

/** The broker destination types. */
export type BrokerType = 'rabbitmq' | 'nats' | AwsType;

/** The kinds of DESTINATION_BROKERS entries: a broker server, or an AWS account and region. */
export type BrokerKind = 'rabbitmq' | 'nats' | 'aws';

/** The kind of broker entry each destination type names. */
export const brokerKindOf: Record<BrokerType, BrokerKind> = {
  rabbitmq: 'rabbitmq',
  nats: 'nats',
  sqs: 'aws',
  sns: 'aws',
  eventbridge: 'aws',
  kinesis: 'aws',
  s3: 'aws',
};

/** A destination as the API takes and shows it (snake_case). */
export type DestinationInput =
  | { type: 'http' }
  | { type: 'cli' }
  | { type: 'rabbitmq'; broker: string; exchange: string; routing_key: string }
  | { type: 'nats'; broker: string; subject: string }
  | AwsDestinationInput;

/** A broker destination, as the worker publishes to it. */
export type BrokerTarget =
  | { type: 'rabbitmq'; broker: string; exchange: string; routingKey: string }
  | { type: 'nats'; broker: string; subject: string }
  | AwsTarget;

/** One broker of DESTINATION_BROKERS. */
export interface BrokerConfig {
  type: BrokerKind;
  /**
   * `amqp(s)://user:password@host:port/vhost`, `nats://host:port` (`user:password@` allowed), or an
   * AWS entry's `endpoint` ('' for the SDK's own per service and region).
   */
  url: string;
  /** AWS: the region. */
  region?: string;
  /** The accounts that may publish to it; undefined: every account. */
  accounts?: readonly string[];
  /** RabbitMQ: the prefix every exchange must start with (`exchange_prefix`); undefined: any. */
  exchangePrefix?: string;
  /** NATS: the prefix every subject must start with (`subject_prefix`); undefined: any. */
  subjectPrefix?: string;
  /** RabbitMQ: whether `''` and `amq.*` exchanges may be named (`allow_reserved_exchanges`; default no). */
  allowReservedExchanges?: boolean;
  /** AWS: whether every destination must name customer-owned credentials (`require_customer_credentials`). */
  requireCustomerCredentials?: boolean;
}

/** Whether `accountId` may name `broker`. */
export function brokerAllows(broker: BrokerConfig, accountId: string): boolean {
  return broker.accounts === undefined || broker.accounts.includes(accountId);
}

/** Longest AMQP exchange name or routing key, and NATS subject, in bytes. */
export const maxBrokerNameBytes = 255;

const brokerName = /^[a-z0-9][a-z0-9-]{0,62}$/;
const brokerSchemes: Record<BrokerKind, readonly string[]> = {
  rabbitmq: ['amqp:', 'amqps:'],
  nats: ['nats:', 'tls:'],
  aws: ['https:', 'http:'],
};
const awsRegion = /^[a-z]{2}(-[a-z]+)+-\d$/;

/**
 * DESTINATION_BROKERS: JSON from broker name (`[a-z0-9-]`) to `{"type", "url", "accounts"?}`; unset: none.
 * @throws ConfigError naming DESTINATION_BROKERS and what is wrong
 */
export function parseDestinationBrokers(raw: string | undefined): Map<string, BrokerConfig> {
  const brokers = new Map<string, BrokerConfig>();
  if (raw === undefined || raw.trim() === '') return brokers;
  const refuse = (why: string) => new ConfigError(`Invalid environment variable DESTINATION_BROKERS: ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw refuse('not JSON (an object from broker name to {"type", "url"})');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw refuse('must be an object from broker name to {"type", "url"}');
  for (const [name, value] of Object.entries(parsed)) {
    if (!brokerName.test(name))
      throw refuse(`broker name "${name}" must be lower-case letters, digits and -`);
    const entry = (value ?? {}) as Record<string, unknown>;
    const { type, accounts, region } = entry;
    if (type !== 'rabbitmq' && type !== 'nats' && type !== 'aws')
      throw refuse(`broker ${name}: type must be "rabbitmq", "nats" or "aws"`);
    if (type === 'aws' && !(typeof region === 'string' && awsRegion.test(region)))
      throw refuse(`broker ${name}: an aws broker names its "region" (such as "eu-west-1")`);
    const urlKey = type === 'aws' ? 'endpoint' : 'url';
    const url = entry[urlKey];
    if (!(type === 'aws' && url === undefined)) {
      let scheme: string;
      try {
        scheme = new URL(String(url)).protocol;
      } catch {
        throw refuse(`broker ${name}: ${urlKey} is not a URL`);
      }
      if (!brokerSchemes[type].includes(scheme))
        throw refuse(`broker ${name}: a ${type} ${urlKey} starts with ${brokerSchemes[type].join(' or ')}//`);
    }
    if (
      accounts !== undefined &&
      !(Array.isArray(accounts) && accounts.every((a) => typeof a === 'string' && a !== ''))
    )
      throw refuse(`broker ${name}: accounts must be a list of account ids`);
    const prefixKey = type === 'rabbitmq' ? 'exchange_prefix' : 'subject_prefix';
    const prefix = type === 'aws' ? undefined : entry[prefixKey];
    if (prefix !== undefined && (typeof prefix !== 'string' || prefix === ''))
      throw refuse(`broker ${name}: ${prefixKey} must be a non-empty string`);
    const reserved = entry.allow_reserved_exchanges;
    if (reserved !== undefined && (type !== 'rabbitmq' || typeof reserved !== 'boolean'))
      throw refuse(`broker ${name}: allow_reserved_exchanges is true or false, on a rabbitmq broker`);
    const customerOnly = entry.require_customer_credentials;
    if (customerOnly !== undefined && (type !== 'aws' || typeof customerOnly !== 'boolean'))
      throw refuse(`broker ${name}: require_customer_credentials is true or false, on an aws broker`);
    brokers.set(name, {
      type,
      url: url === undefined ? '' : String(url),
      ...(accounts === undefined ? {} : { accounts: accounts as string[] }),
      ...(type === 'aws' ? { region: String(region) } : {}),
      ...(prefix === undefined
        ? {}
        : type === 'rabbitmq'
          ? { exchangePrefix: prefix }
          : { subjectPrefix: prefix }),
      ...(reserved === true ? { allowReservedExchanges: true } : {}),
      ...(customerOnly === true ? { requireCustomerCredentials: true } : {}),
    });
  }
  return brokers;
}

/** The stored `callback_url` of a broker destination. */
export function destinationUrl(target: BrokerTarget): string {
  const part = encodeURIComponent;
  if (target.type !== 'rabbitmq' && target.type !== 'nats') return awsDestinationUrl(target);
  return target.type === 'rabbitmq'
    ? `rabbitmq://${target.broker}/${part(target.exchange)}/${part(target.routingKey)}`
    : `nats://${target.broker}/${part(target.subject)}`;
}

/** The broker destination a stored `callback_url` names, or null for an http(s) callback. */
export function brokerTarget(callbackUrl: string): BrokerTarget | null {
  const scheme = /^([a-z][a-z0-9]*):\/\//.exec(callbackUrl)?.[1];
  if (scheme === undefined || (scheme !== 'rabbitmq' && scheme !== 'nats' && !isAwsType(scheme))) return null;
  const url = new URL(callbackUrl);
  const parts = url.pathname.slice(1).split('/').map(decodeURIComponent);
  if (isAwsType(scheme)) return awsTargetOf(scheme, url.hostname, parts);
  return scheme === 'rabbitmq'
    ? { type: 'rabbitmq', broker: url.hostname, exchange: parts[0] ?? '', routingKey: parts[1] ?? '' }
    : { type: 'nats', broker: url.hostname, subject: parts[0] ?? '' };
}

/** The API's view of a stored `callback_url`. */
export function destinationOf(callbackUrl: string): DestinationInput {
  if (relaySession(callbackUrl) !== null) return { type: 'cli' };
  const target = brokerTarget(callbackUrl);
  if (target === null) return { type: 'http' };
  if (target.type !== 'rabbitmq' && target.type !== 'nats') return awsDestinationView(target);
  return target.type === 'rabbitmq'
    ? { type: 'rabbitmq', broker: target.broker, exchange: target.exchange, routing_key: target.routingKey }
    : { type: 'nats', broker: target.broker, subject: target.subject };
}

/** The name the host cap counts a broker destination under: one cap per broker. */
export function brokerCapHost(target: BrokerTarget): string {
  return `${target.type}:${target.broker}`;
}

const natsSubject = /^[^\s.*>]+(\.[^\s.*>]+)*$/;

/**
 * Why `broker` refuses a target, or null. RabbitMQ's `''` (routes to any queue) and `amq.*` (the
 * broker's own) unless allowed; NATS `$…` (server APIs) and `_INBOX.` (replies), always
 * (docs.nats.io, "NATS API Reference"). A per-broker prefix confines accounts to their part.
 */
export function brokerNameRefusal(
  target: BrokerTarget,
  broker: Pick<BrokerConfig, 'exchangePrefix' | 'subjectPrefix' | 'allowReservedExchanges'>,
): { pointer: string; detail: string } | null {
  if (target.type === 'rabbitmq') {
    const pointer = '/destination/exchange';
    if (
      broker.allowReservedExchanges !== true &&
      (target.exchange === '' || target.exchange.startsWith('amq.'))
    )
      return { pointer, detail: "must not be the default exchange '' or one of the broker's own (amq.*)" };
    if (broker.exchangePrefix !== undefined && !target.exchange.startsWith(broker.exchangePrefix))
      return { pointer, detail: `must start with ${JSON.stringify(broker.exchangePrefix)} on this broker` };
    return null;
  }
  if (target.type !== 'nats') return null;
  const pointer = '/destination/subject';
  if (target.subject.startsWith('$') || target.subject.startsWith('_INBOX.'))
    return { pointer, detail: "must not be one of the server's own subjects ($…, _INBOX.…)" };
  if (broker.subjectPrefix !== undefined && !target.subject.startsWith(broker.subjectPrefix))
    return { pointer, detail: `must start with ${JSON.stringify(broker.subjectPrefix)} on this broker` };
  return null;
}

/**
 * Checks `accountId`'s broker destination; a broker it may not name reads as nonexistent.
 * @returns the target, or the problem naming the field under `/destination`
 */
export function checkDestination(
  input: Exclude<DestinationInput, { type: 'http' | 'cli' }>,
  brokers: ReadonlyMap<string, BrokerConfig>,
  accountId: string,
): { target: BrokerTarget } | DestinationProblem {
  const allowed = [...brokers].filter(([, config]) => brokerAllows(config, accountId));
  const broker = allowed.find(([name]) => name === input.broker)?.[1];
  if (broker === undefined)
    return {
      pointer: '/destination/broker',
      detail:
        allowed.length === 0
          ? 'names no broker: this deployment has none for this account (DESTINATION_BROKERS)'
          : `names no ${input.type} broker of this deployment (${allowed.map(([name]) => name).join(', ')})`,
    };
  if (broker.type !== brokerKindOf[input.type])
    return {
      pointer: '/destination/broker',
      detail: `is a ${broker.type} broker, not ${brokerKindOf[input.type]}`,
    };
  const tooLong = (value: string) => Buffer.byteLength(value) > maxBrokerNameBytes;
  if (input.type === 'rabbitmq') {
    if (tooLong(input.exchange))
      return { pointer: '/destination/exchange', detail: `is longer than ${maxBrokerNameBytes} bytes` };
    if (tooLong(input.routing_key))
      return { pointer: '/destination/routing_key', detail: `is longer than ${maxBrokerNameBytes} bytes` };
    const target: BrokerTarget = {
      type: 'rabbitmq',
      broker: input.broker,
      exchange: input.exchange,
      routingKey: input.routing_key,
    };
    return brokerNameRefusal(target, broker) ?? { target };
  }
  if (input.type !== 'nats') {
    if (broker.requireCustomerCredentials === true && input.credentials === undefined)
      return {
        pointer: '/destination/credentials',
        detail:
          "is required on this broker: name a role of yours to assume (or access keys); the deployment's own identity does not write here",
      };
    return checkAwsDestination(input, broker.region ?? '');
  }
  if (tooLong(input.subject) || !natsSubject.test(input.subject))
    return {
      pointer: '/destination/subject',
      detail: `must be dot-separated tokens without whitespace or wildcards (* >), at most ${maxBrokerNameBytes} bytes`,
    };
  const target: BrokerTarget = { type: 'nats', broker: input.broker, subject: input.subject };
  return brokerNameRefusal(target, broker) ?? { target };
}
