import { describe, expect, it } from '@jest/globals';
import Type from 'typebox';
import { httpStatusClass, operatorTokenAccepted, redactedConfig, splitList } from '../src/index.js';

describe('an operator token', () => {
  const token = 'ops-token';
  const basic = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  it('is accepted as a bearer token or as the password of Basic authentication, any user', () => {
    expect(operatorTokenAccepted(`Bearer ${token}`, token)).toBe(true);
    expect(operatorTokenAccepted(`bearer  ${token}`, token)).toBe(true);
    expect(operatorTokenAccepted(basic('anyone', token), token)).toBe(true);
    expect(operatorTokenAccepted(basic('', `${token}`), token)).toBe(true);
  });

  it('is refused when absent, different, a prefix of it, or in another scheme', () => {
    expect(operatorTokenAccepted(undefined, token)).toBe(false);
    expect(operatorTokenAccepted('Bearer ops', token)).toBe(false);
    expect(operatorTokenAccepted(`Bearer ${token}x`, token)).toBe(false);
    expect(operatorTokenAccepted(basic(token, 'nope'), token)).toBe(false);
    expect(operatorTokenAccepted(`Token ${token}`, token)).toBe(false);
  });
});

describe('the configuration logged at start-up', () => {
  const schema = Type.Object({
    JWT_SECRET: Type.String(),
    ADMIN_TOKEN: Type.String(),
    DATABASE_URL: Type.String(),
    REDIS_URL: Type.String(),
    PORT: Type.Integer(),
  });

  it('redacts secrets and URL passwords, shows everything else, and only the schema', () => {
    expect(
      redactedConfig(schema, {
        JWT_SECRET: 's3cret-s3cret',
        ADMIN_TOKEN: '',
        DATABASE_URL: 'postgresql://app:pa55@db:5432/webhooks',
        REDIS_URL: 'redis://127.0.0.1:6379',
        PORT: 3000,
        secretBox: { key: 'x' },
      }),
    ).toEqual({
      JWT_SECRET: 'redacted',
      ADMIN_TOKEN: '',
      DATABASE_URL: 'postgresql://app:redacted@db:5432/webhooks',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PORT: 3000,
    });
  });

  it('redacts the passwords of URLs inside a value, such as the brokers of DESTINATION_BROKERS', () => {
    const brokers = Type.Object({ DESTINATION_BROKERS: Type.String() });
    const value = JSON.stringify({
      orders: { type: 'rabbitmq', url: 'amqp://hooks:s3cr%40t@rabbit:5672/vhost' },
      events: { type: 'nats', url: 'nats://nats:4222' },
    });
    const shown = redactedConfig(brokers, { DESTINATION_BROKERS: value }).DESTINATION_BROKERS as string;
    expect(shown).not.toContain('s3cr');
    expect(JSON.parse(shown)).toEqual({
      orders: { type: 'rabbitmq', url: 'amqp://hooks:redacted@rabbit:5672/vhost' },
      events: { type: 'nats', url: 'nats://nats:4222' },
    });
  });
});

describe('configuration lists and status classes', () => {
  it('splits a comma list, trimmed, without empty entries', () => {
    expect(splitList(' a, b ,,c ')).toEqual(['a', 'b', 'c']);
    expect(splitList('')).toEqual([]);
  });

  it('classes an HTTP status by its first digit', () => {
    expect([200, 204, 301, 404, 429, 503].map(httpStatusClass)).toEqual([
      '2xx',
      '2xx',
      '3xx',
      '4xx',
      '4xx',
      '5xx',
    ]);
  });
});
