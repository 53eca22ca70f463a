import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '@webhooks/shared';
import { apiServerUrl, developmentJwtSecret, loadApiConfig } from '../src/index.js';

const key = Buffer.alloc(32, 1).toString('base64');
const strongSecret = 'a-production-secret-of-at-least-32-bytes';
/** An operator token of the length production asks for (32 characters). */
const metricsToken = 'metrics-token-32-characters-long';

describe('API configuration from the environment', () => {
  it('applies the documented defaults in development, with a warning about the public secret', () => {
    const api = loadApiConfig({ NODE_ENV: 'development' });
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
    expect(api.secretBox.encrypting).toBe(false);
  });

  it.each([
    [{ NODE_ENV: 'development', PORT: 'eighty' }, 'PORT'],
    [{ NODE_ENV: 'development', PORT: '70000' }, 'PORT'],
    [{ NODE_ENV: 'development', LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ NODE_ENV: 'development', CALLBACK_ALLOW_PRIVATE: 'sometimes' }, 'CALLBACK_ALLOW_PRIVATE'],
    [{ NODE_ENV: 'development', JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ NODE_ENV: 'development', JWT_SECRET: 'é'.repeat(15) }, 'JWT_SECRET'],
    [{ NODE_ENV: 'development', SECRETS_ENCRYPTION_KEY: 'not-base64-32-bytes' }, 'SECRETS_ENCRYPTION_KEY'],
    [
      { NODE_ENV: 'development', SECRETS_ENCRYPTION_KEY: `${key},${Buffer.alloc(16).toString('base64')}` },
      'SECRETS_ENCRYPTION_KEY',
    ],
    [{ NODE_ENV: 'production', SECRETS_ENCRYPTION_KEY: key }, 'JWT_SECRET'],
    [{ SECRETS_ENCRYPTION_KEY: key }, 'JWT_SECRET'],
    [{ NODE_ENV: 'prod', SECRETS_ENCRYPTION_KEY: key }, 'JWT_SECRET'],
    [{ NODE_ENV: 'Production', SECRETS_ENCRYPTION_KEY: key, JWT_SECRET: developmentJwtSecret }, 'JWT_SECRET'],
    [{ NODE_ENV: 'production', JWT_SECRET: strongSecret }, 'SECRETS_ENCRYPTION_KEY'],
    [{ JWT_SECRET: strongSecret }, 'SECRETS_ENCRYPTION_KEY'],
    [
      { NODE_ENV: 'production', JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----', SECRETS_ENCRYPTION_KEY: key },
      'JWT_ISSUER and JWT_AUDIENCE',
    ],
    [
      {
        NODE_ENV: 'production',
        JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----',
        JWT_ISSUER: 'https://id.example.com/',
        SECRETS_ENCRYPTION_KEY: key,
      },
      'JWT_AUDIENCE',
    ],
    [{ NODE_ENV: 'development', JWT_MAX_AGE_SECONDS: '10' }, 'JWT_MAX_AGE_SECONDS'],
    [{ NODE_ENV: 'production', JWT_SECRET: strongSecret, SECRETS_ENCRYPTION_KEY: key }, 'METRICS_TOKEN'],
    [
      {
        NODE_ENV: 'production',
        JWT_SECRET: strongSecret,
        SECRETS_ENCRYPTION_KEY: key,
        METRICS_TOKEN: 'short',
      },
      'METRICS_TOKEN',
    ],
    [
      {
        NODE_ENV: 'production',
        JWT_SECRET: strongSecret,
        SECRETS_ENCRYPTION_KEY: key,
        METRICS_TOKEN: metricsToken,
        ADMIN_TOKEN: 'admin-token-31-characters-long!',
      },
      'ADMIN_TOKEN',
    ],
    [
      {
        NODE_ENV: 'production',
        JWT_SECRET: strongSecret,
        SECRETS_ENCRYPTION_KEY: key,
        CALLBACK_ALLOW_PRIVATE: 'true',
      },
      'CALLBACK_ALLOW_PRIVATE',
    ],
    [{ NODE_ENV: 'development', CALLBACK_PORTS: '80,99999' }, 'CALLBACK_PORTS'],
    [{ NODE_ENV: 'development', CALLBACK_PORTS: '443-80' }, 'CALLBACK_PORTS'],
    [{ NODE_ENV: 'development', CALLBACK_DENY_CIDRS: '10.0.0.0/33' }, 'CALLBACK_DENY_CIDRS'],
  ])('refuses to start with %j, naming %s', (env, name) => {
    expect(() => loadApiConfig(env)).toThrow(ConfigError);
    expect(() => loadApiConfig(env)).toThrow(new RegExp(`environment variable ${name}\\b`));
  });

  it('starts in production with a strong secret and an encryption key, or with JWT_PUBLIC_KEY', () => {
    const hs = loadApiConfig({
      NODE_ENV: 'production',
      JWT_SECRET: strongSecret,
      SECRETS_ENCRYPTION_KEY: key,
      METRICS_TOKEN: metricsToken,
    });
    expect(hs.jwtKey).toEqual({ algorithm: 'HS256', key: strongSecret });
    expect(hs.secretBox.encrypting).toBe(true);
    const rs = loadApiConfig({
      JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----',
      JWT_ISSUER: 'https://id.example.com/',
      JWT_AUDIENCE: 'webhooks',
      SECRETS_ENCRYPTION_KEY: key,
      METRICS_TOKEN: metricsToken,
    });
    expect(rs.jwtKey.algorithm).toBe('RS256');
  });

  it('accepts the development secret in test, where nothing is at stake', () => {
    expect(loadApiConfig({ NODE_ENV: 'test', JWT_SECRET: developmentJwtSecret }).jwtKey.key).toBe(
      developmentJwtSecret,
    );
  });

  it.each(['hooks.example.com', 'ftp://hooks.example.com', 'https://hooks.example.com/?x=1', 'https://'])(
    'refuses PUBLIC_BASE_URL %j, naming it',
    (value) => {
      expect(() => loadApiConfig({ NODE_ENV: 'test', PUBLIC_BASE_URL: value })).toThrow(
        /environment variable PUBLIC_BASE_URL\b/,
      );
    },
  );

  it('names its OpenAPI server after PUBLIC_BASE_URL, else after HOST and PORT', () => {
    const server = (env: Record<string, string>) => apiServerUrl(loadApiConfig({ NODE_ENV: 'test', ...env }));
    expect(server({})).toBe('http://127.0.0.1:3000');
    expect(server({ PUBLIC_BASE_URL: 'https://hooks.example.com/webhooks/' })).toBe(
      'https://hooks.example.com/webhooks',
    );
    expect(server({ HOST: '0.0.0.0', PORT: '8080' })).toBe('http://localhost:8080');
    expect(server({ HOST: '::1' })).toBe('http://[::1]:3000');
  });
});
