/**
 * A configuration the services refuse stops them with one line naming the variable, never a
 * stack trace: the built entry points as the images start them.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';
import { entries } from '../scripts/lib/services.js';

/** Production settings complete but for SECRETS_ENCRYPTION_KEY. */
const withoutEncryptionKey = {
  NODE_ENV: 'production',
  JWT_SECRET: 'a-production-secret-of-at-least-32-bytes!',
  METRICS_TOKEN: 'a-metrics-token-of-enough-length',
  SECRETS_ENCRYPTION_KEY: '',
  WORKER_HEALTH_PORT: '0',
  PORT: '0',
};

describe('a refused configuration', () => {
  it.each(['api', 'worker'] as const)('stops the %s with one line naming the variable', (service) => {
    const run = spawnSync(process.execPath, [entries[service]], {
      env: { ...process.env, ...withoutEncryptionKey },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(`^${service}: configuration error: Missing environment variable SECRETS_ENCRYPTION_KEY: `),
      ),
    ]);
  });

  it.each(['api', 'worker'] as const)(
    'stops the %s with one line when DESTINATION_BROKERS cannot be read',
    (service) => {
      const run = spawnSync(process.execPath, [entries[service]], {
        env: {
          ...process.env,
          NODE_ENV: 'development',
          WORKER_HEALTH_PORT: '0',
          PORT: '0',
          DESTINATION_BROKERS: '{"orders": {"type": "kafka", "url": "kafka://h"}}',
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr.trim().split('\n')).toEqual([
        `${service}: configuration error: Invalid environment variable DESTINATION_BROKERS: broker orders: type must be "rabbitmq", "nats" or "aws"`,
      ]);
    },
  );
});
