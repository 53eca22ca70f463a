/**
 * The relay's bounds against the real Redis: one `webhooks listen` session holds at most
 * RELAY_SESSION_MAX_BYTES of waiting attempts, the oldest pushed out failing with a reason that says
 * so, while another account's session is still answered; an ended attempt's copy of the body goes at
 * once, and a payload larger than the whole bound fails without being stored.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { relayKeys } from '@webhooks/shared';
import { createRelaySender, droppedMessage, tooLargeMessage } from '../src/destinations/relay.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('relay-bounds');
const maxSessionBytes = 1_048_576;
const relay = createRelaySender({
  redis,
  blocking: () => redis.duplicate(),
  prefix,
  timeoutMs: 4_000,
  maxSessionBytes,
  log: pino({ level: 'silent' }),
});
afterAll(async () => {
  relay.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

/** Answers the session's attempts as the API does for a CLI: each waiting request gets `status`. */
async function answerAll(session: string, status: number): Promise<number> {
  const keys = relayKeys(prefix, session);
  let answered = 0;
  for (const [, fields] of await redis.xrange(keys.requests, '-', '+')) {
    const requestId = fields[fields.indexOf('request_id') + 1]!;
    const list = await redis.hget(keys.pending, requestId);
    if (list === null) continue;
    await redis.lpush(list, JSON.stringify({ request_id: requestId, status, error: null, body: 'ok' }));
    await redis.hdel(keys.pending, requestId);
    answered += 1;
  }
  return answered;
}

const headers = (id: string) => ({ 'webhook-id': id, 'content-type': 'application/json' });

describe('the relay session bounds', () => {
  it("keeps one session within its byte bound, failing the oldest attempts it drops, and still serves another account's session", async () => {
    // A transformation that pads every payload to about 250 KB: four fit in the bound.
    const padded = JSON.stringify({ type: 'call.started', pad: 'x'.repeat(250_000) });
    const flood = Array.from({ length: 40 }, (_, i) =>
      relay.send('session-flood', padded, headers(`msg_flood_${i}`)),
    );
    const keys = relayKeys(prefix, 'session-flood');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const held = Number(await redis.get(keys.bytes));
    const streamBytes = Number(await redis.memory('USAGE', keys.requests));
    expect(held).toBeLessThanOrEqual(maxSessionBytes);
    expect(streamBytes).toBeLessThan(2 * maxSessionBytes);
    expect(await redis.xlen(keys.requests)).toBeLessThanOrEqual(4);

    const other = relay.send('session-other', '{"type":"call.ended"}', headers('msg_other'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await answerAll('session-other', 200)).toBe(1);
    expect(await other).toMatchObject({ statusCode: 200, errorClass: null });

    const results = await Promise.all(flood);
    const dropped = results.filter((result) => result.errorMessage === droppedMessage);
    const timedOut = results.filter((result) => result.errorClass === 'timeout');
    expect(dropped).toHaveLength(36);
    expect(timedOut).toHaveLength(4);
    expect(dropped[0]).toMatchObject({ statusCode: null, errorClass: 'other' });
    // Every attempt has ended: no copy of a body is left.
    expect(await redis.xlen(keys.requests)).toBe(0);
    expect(Number(await redis.get(keys.bytes))).toBe(0);
    expect(await redis.hlen(keys.pending)).toBe(0);
  }, 30_000);

  it('fails a payload larger than the whole bound without storing it', async () => {
    const result = await relay.send('session-huge', 'x'.repeat(maxSessionBytes + 1), headers('msg_huge'));
    expect(result).toMatchObject({ statusCode: null, errorClass: 'other', errorMessage: tooLargeMessage });
    expect(await redis.exists(relayKeys(prefix, 'session-huge').requests)).toBe(0);
  });
});
