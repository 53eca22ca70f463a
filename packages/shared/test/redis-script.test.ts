/**
 * A script defined with named keys and arguments, against the real Redis: each name reaches the
 * script as the one the caller passed, whatever the order of the caller's object, the values
 * after them reach it in order, and `now` is Redis' clock.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { defineScript, scriptSource } from '../src/index.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('redis-script');
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

describe('defineScript', () => {
  it('binds each key and argument by name, and gives the script the clock it asks for', async () => {
    const script = defineScript<[string, string, string, number]>()(redis, {
      name: 'testNamedArguments',
      keys: ['first', 'second'],
      args: ['value', 'ttlMs'],
      clock: true,
      lua: `redis.call('SET', K.second, A.value, 'PX', A.ttlMs)
return {K.first, redis.call('GET', K.second), A.ttlMs, now}`,
    });
    const keys = { second: `${prefix}:second`, first: `${prefix}:first` };
    const before = Date.now();
    const [first, stored, ttl, now] = await script(keys, { ttlMs: 60_000, value: 'v' });
    expect([first, stored, ttl]).toEqual([keys.first, 'v', '60000']);
    expect(now).toBeGreaterThanOrEqual(before - 1_000);
    expect(await redis.pttl(keys.second)).toBeGreaterThan(50_000);
  });

  it('gives a script that takes any number of values those after its named arguments, in order', async () => {
    const script = defineScript<string[]>()(redis, {
      name: 'testRestArguments',
      keys: ['list'],
      args: ['label'],
      rest: true,
      lua: `local out = {A.label}
for _, value in ipairs(R) do out[#out + 1] = value end
return out`,
    });
    expect(await script({ list: `${prefix}:list` }, { label: 'l' }, ['a', 2, 'c'])).toEqual([
      'l',
      'a',
      '2',
      'c',
    ]);
    expect(await script({ list: `${prefix}:list` }, { label: 'l' })).toEqual(['l']);
  });

  it('writes no clock into a script that does not ask for it', () => {
    const source = scriptSource({ name: 'x', keys: ['a'], args: ['b', 'c'], lua: 'return 1' });
    expect(source).toBe('local K = {a = KEYS[1]}\nlocal A = {b = ARGV[1], c = ARGV[2]}\nreturn 1');
  });
});
