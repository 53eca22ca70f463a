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

  it('reads per-account overrides', () => {
    const config = loadWorkerConfig({
      NODE_ENV: 'test',
      ACCOUNT_OVERRIDES: '{"acct-big": {"weight": 4, "deliveries_per_second": 20000}}',
    });
    expect(config.accountOverrides.get('acct-big')).toEqual({ weight: 4, deliveries_per_second: 20000 });
    expect(config.ACCOUNT_DELIVERIES_PER_SECOND).toBe(5_000);
  });

  it('names the account and field of an override it refuses', () => {
    expect(() =>
      loadWorkerConfig({ NODE_ENV: 'test', ACCOUNT_OVERRIDES: '{"acct-a": {"weight": 0}}' }),
    ).toThrow(/ACCOUNT_OVERRIDES at \/acct-a\/weight/);
  });

  it.each([
    [{ NODE_ENV: 'test', WORKER_CONCURRENCY: '0' }, 'WORKER_CONCURRENCY'],
    [{ NODE_ENV: 'test', DELIVERY_MAX_ATTEMPTS: 'five' }, 'DELIVERY_MAX_ATTEMPTS'],
    [{ NODE_ENV: 'test', DELIVERY_TIMEOUT_MS: '5' }, 'DELIVERY_TIMEOUT_MS'],
    [{}, 'SECRETS_ENCRYPTION_KEY'],
    [{ NODE_ENV: 'staging' }, 'SECRETS_ENCRYPTION_KEY'],
    [{ NODE_ENV: 'test', DNS_SERVERS: 'dns.example' }, 'DNS_SERVERS'],
    [{ NODE_ENV: 'test', ACCOUNT_OVERRIDES: '{"acct-a": {"weight": 0}}' }, 'ACCOUNT_OVERRIDES'],
    [{ NODE_ENV: 'test', ACCOUNT_OVERRIDES: '{"acct-a": {"priority": 1}}' }, 'ACCOUNT_OVERRIDES'],
    [{ NODE_ENV: 'test', ACCOUNT_OVERRIDES: 'acct-a=2' }, 'ACCOUNT_OVERRIDES'],
    [{ NODE_ENV: 'test', ACCOUNT_OVERRIDES: '{" ": {"weight": 2}}' }, 'ACCOUNT_OVERRIDES'],
    [
      {
        NODE_ENV: 'production',
        SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
        CALLBACK_ALLOW_PRIVATE: 'true',
      },
      'CALLBACK_ALLOW_PRIVATE',
    ],
    [{ NODE_ENV: 'test', CALLBACK_DENY_CIDRS: 'not-a-range' }, 'CALLBACK_DENY_CIDRS'],
    [
      { NODE_ENV: 'production', SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') },
      'METRICS_TOKEN',
    ],
    [
      {
        NODE_ENV: 'production',
        SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
        METRICS_TOKEN: 'a-metrics-token',
      },
      'METRICS_TOKEN',
    ],
  ])('refuses %j naming %s', (env, name) => {
    expect(() => loadWorkerConfig(env)).toThrow(ConfigError);
    expect(() => loadWorkerConfig(env)).toThrow(new RegExp(`environment variable ${name}\\b`));
  });
});
