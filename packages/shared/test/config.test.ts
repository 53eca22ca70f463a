import { describe, expect, it } from '@jest/globals';
import { loadApiConfig } from '@webhooks/api';
import { loadWorkerConfig } from '@webhooks/worker';
import { ConfigError } from '../src/index.js';

describe('configuration from the environment', () => {
  it('applies the documented defaults', () => {
    const api = loadApiConfig({});
    expect(api).toMatchObject({
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/webhooks',
      REDIS_URL: 'redis://127.0.0.1:6379',
      HOST: '127.0.0.1',
      PORT: 3000,
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: 600,
      CALLBACK_ALLOW_PRIVATE: false,
    });
    expect(api.jwtWarning).toMatch(/development secret/);
    expect(loadWorkerConfig({})).toMatchObject({
      WORKER_CONCURRENCY: 50,
      DELIVERY_TIMEOUT_MS: 10_000,
      DELIVERY_MAX_ATTEMPTS: 5,
      DELIVERY_BACKOFF_MS: 60_000,
      SUBSCRIPTION_DISABLE_AFTER: 5,
    });
  });

  it('converts numbers and booleans', () => {
    expect(loadWorkerConfig({ WORKER_CONCURRENCY: '8', CALLBACK_ALLOW_PRIVATE: 'true' })).toMatchObject({
      WORKER_CONCURRENCY: 8,
      CALLBACK_ALLOW_PRIVATE: true,
    });
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ CALLBACK_ALLOW_PRIVATE: 'sometimes' }, 'CALLBACK_ALLOW_PRIVATE'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ NODE_ENV: 'production' }, 'JWT_SECRET'],
  ])('refuses %j with an error naming %s', (env, name) => {
    expect(() => loadApiConfig(env)).toThrow(ConfigError);
    expect(() => loadApiConfig(env)).toThrow(new RegExp(name));
  });

  it.each([
    [{ WORKER_CONCURRENCY: '0' }, 'WORKER_CONCURRENCY'],
    [{ DELIVERY_MAX_ATTEMPTS: 'five' }, 'DELIVERY_MAX_ATTEMPTS'],
    [{ DELIVERY_TIMEOUT_MS: '5' }, 'DELIVERY_TIMEOUT_MS'],
  ])('refuses worker setting %j naming %s', (env, name) => {
    expect(() => loadWorkerConfig(env)).toThrow(new RegExp(`Invalid environment variable ${name}`));
  });

  it('needs no JWT_SECRET in production when JWT_PUBLIC_KEY is set', () => {
    const config = loadApiConfig({ NODE_ENV: 'production', JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----' });
    expect(config.jwtKey.algorithm).toBe('RS256');
  });
});
