import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '@webhooks/shared';
import { loadWorkerConfig } from '../src/index.js';

describe('worker configuration from the environment', () => {
  it('applies the documented defaults', () => {
    expect(loadWorkerConfig({ NODE_ENV: 'development' })).toMatchObject({
      WORKER_CONCURRENCY: 50,
      DELIVERY_TIMEOUT_MS: 10_000,
      DELIVERY_MAX_ATTEMPTS: 5,
      DELIVERY_BACKOFF_MS: 60_000,
      SUBSCRIPTION_DISABLE_AFTER: 5,
      SUBSCRIPTION_MAX_IN_FLIGHT: 10,
      dnsServers: [],
    });
  });

  it('converts numbers and booleans', () => {
    expect(
      loadWorkerConfig({ NODE_ENV: 'test', WORKER_CONCURRENCY: '8', CALLBACK_ALLOW_PRIVATE: 'true' }),
    ).toMatchObject({ WORKER_CONCURRENCY: 8, CALLBACK_ALLOW_PRIVATE: true });
    expect(loadWorkerConfig({ NODE_ENV: 'test', DNS_SERVERS: '10.0.0.2, 10.0.0.3:5353' }).dnsServers).toEqual(
      ['10.0.0.2', '10.0.0.3:5353'],
    );
  });

  it.each([
    [{ NODE_ENV: 'test', WORKER_CONCURRENCY: '0' }, 'WORKER_CONCURRENCY'],
    [{ NODE_ENV: 'test', DELIVERY_MAX_ATTEMPTS: 'five' }, 'DELIVERY_MAX_ATTEMPTS'],
    [{ NODE_ENV: 'test', DELIVERY_TIMEOUT_MS: '5' }, 'DELIVERY_TIMEOUT_MS'],
    [{}, 'SECRETS_ENCRYPTION_KEY'],
    [{ NODE_ENV: 'staging' }, 'SECRETS_ENCRYPTION_KEY'],
    [{ NODE_ENV: 'test', DNS_SERVERS: 'dns.example' }, 'DNS_SERVERS'],
  ])('refuses %j naming %s', (env, name) => {
    expect(() => loadWorkerConfig(env)).toThrow(ConfigError);
    expect(() => loadWorkerConfig(env)).toThrow(new RegExp(`environment variable ${name}\\b`));
  });
});
