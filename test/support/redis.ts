/** A Redis key prefix of a test file's own, and its removal afterwards. */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** Redis the tests use (TEST_REDIS_URL, default the local server). */
export const testRedisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A fresh BullMQ prefix, `wh-test-<tag>-<random>`. */
export function newQueuePrefix(tag: string): string {
  return `wh-test-${tag}-${randomBytes(4).toString('hex')}`;
}

/** Deletes every key under `prefix`. */
export async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis(testRedisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
