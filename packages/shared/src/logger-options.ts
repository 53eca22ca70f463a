/**
 * The services' pino options: LOG_LEVEL, secrets redacted (`log-redaction.ts`), and LOG_PRETTY
 * (pino-pretty, a development dependency absent from images: refused in production).
 */
import Type from 'typebox';
import { ConfigError } from '@webhooks/publisher';
import { connectionUrlSecrets, secretRedactingHooks } from './log-redaction.js';

/** LOG_PRETTY, part of both services' schemas. */
export const logFormatEnv = {
  LOG_PRETTY: Type.Boolean({
    default: false,
    description:
      'Human-readable log lines (pino-pretty) instead of JSON; NODE_ENV development only (`pnpm start` sets it on a terminal)',
  }),
};

/** What {@link serviceLoggerOptions} reads of a service's configuration. */
export interface LoggerConfig {
  NODE_ENV: string;
  LOG_LEVEL: string;
  LOG_PRETTY: boolean;
  DATABASE_URL: string;
  REDIS_URL: string;
  /** DESTINATION_BROKERS, whose URLs' passwords are redacted too. */
  brokers?: ReadonlyMap<string, { url: string }>;
}

/** pino's `LoggerOptions`, as far as a service sets them. */
export interface ServiceLoggerOptions {
  level: string;
  name?: string;
  hooks: ReturnType<typeof secretRedactingHooks>;
  transport?: { target: string; options: Record<string, unknown> };
}

/** pino's options for a service's logger named `name`. @throws ConfigError naming LOG_PRETTY outside development */
export function serviceLoggerOptions(config: LoggerConfig, name?: string): ServiceLoggerOptions {
  if (config.LOG_PRETTY && config.NODE_ENV !== 'development') {
    throw new ConfigError(
      `Invalid environment variable LOG_PRETTY=true: pino-pretty is a development dependency, so it is refused unless NODE_ENV is development (NODE_ENV is ${JSON.stringify(config.NODE_ENV)})`,
    );
  }
  const options: ServiceLoggerOptions = {
    level: config.LOG_LEVEL,
    hooks: secretRedactingHooks(
      connectionUrlSecrets([
        config.DATABASE_URL,
        config.REDIS_URL,
        ...[...(config.brokers?.values() ?? [])].map((broker) => broker.url),
      ]),
    ),
  };
  if (name !== undefined) options.name = name;
  if (config.LOG_PRETTY) {
    options.transport = {
      target: 'pino-pretty',
      options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
    };
  }
  return options;
}
