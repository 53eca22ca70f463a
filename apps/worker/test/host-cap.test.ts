/**
 * The cap per destination host, end to end: however many subscriptions of however many accounts
 * point at one host, at most HOST_MAX_IN_FLIGHT attempts reach it at once, and every delivery
 * still arrives; accounts sharing a host get their share of its slots while a flooding account
 * holds them all. Orders of arrival are asserted, never durations.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { keySlot, subscriptionGateKeys } from '@webhooks/shared';
import { hostCapKey, hostCapKeys, hostCapPerShard, hostWaitMs } from '../src/delivery/host-gate.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('host-cap', {
    HOST_MAX_IN_FLIGHT: '2',
    SUBSCRIPTION_MAX_IN_FLIGHT: '1',
    WORKER_CONCURRENCY: '20',
    DELIVERY_BACKOFF_MS: '200',
  });
});
afterAll(async () => {
  await stack.close();
}, 60_000);

const answerAfterMs = 300;

describe('the cap per destination host', () => {
  it('lets at most HOST_MAX_IN_FLIGHT attempts reach one host at once, across accounts', async () => {
    const paths: string[] = [];
    for (const account of ['acct-host-a', 'acct-host-b'])
      for (let i = 0; i < 3; i++) {
        const path = `/${account}/${i}`;
        stack.receiver.script(path, [{ status: 200, afterMs: answerAfterMs }]);
        await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
        paths.push(path);
      }
    for (const account of ['acct-host-a', 'acct-host-b'])
      for (let n = 0; n < 2; n++)
        await stack.publisher.publish({ accountId: account, type: 'call.completed', data: { n } });

    const expected = paths.length * 2;
    await waitFor('every delivery', () => paths.flatMap((p) => stack.receiver.at(p)).length === expected);
    const arrivals = paths
      .flatMap((p) => stack.receiver.at(p))
      .map((r) => r.at)
      .sort((a, b) => a - b);
    // A third request arrives only once one of the two before it has been answered.
    for (let i = 2; i < arrivals.length; i++)
      expect(arrivals[i]).toBeGreaterThanOrEqual(arrivals[i - 2]! + answerAfterMs);
  });
});

describe('accounts sharing a host beside a flooding one', () => {
  const cap = 4;
  let shared: TestStack;
  beforeAll(async () => {
    shared = await startTestStack('host-share', {
      HOST_MAX_IN_FLIGHT: String(cap),
      WORKER_CONCURRENCY: '50',
      DELIVERY_QUEUE_TARGET: '100',
    });
  });
  afterAll(() => shared.close(), 60_000);

  it('each get deliveries while the flood holds the host cap', async () => {
    const { receiver } = shared;
    // The flood: 10 subscriptions on the host, each answered after 300 ms; 6 events, 60 deliveries,
    // 15 rounds of the cap. An event of 10 is a quiet account's share: in the front lane, as the
    // other accounts' deliveries are, so the lanes do not tell them apart.
    for (let i = 0; i < 10; i++) {
      const path = `/share-flood/${i}`;
      receiver.script(path, [{ status: 200, afterMs: answerAfterMs }]);
      await shared.subscribe('acct-share-flood', { callback_url: `${receiver.url}${path}` });
    }
    for (const account of ['acct-share-b', 'acct-share-c']) {
      receiver.script(`/share/${account}`, [{ status: 200, afterMs: answerAfterMs }]);
      await shared.subscribe(account, { callback_url: `${receiver.url}/share/${account}` });
    }
    const publish = (accountId: string) =>
      shared.publisher.publish({ accountId, type: 'call.completed', data: {} });
    for (let i = 0; i < 6; i++) await publish('acct-share-flood');
    await waitFor('the flood holding the host cap', () => receiver.requests.length >= cap);

    // When each quiet account first asked for a slot and was refused, by the cap's own records
    // (Redis time, ms): from then on the flood may not take a freed slot, so at most the `cap`
    // attempts it had already been given reach the host ahead. Counting from the publish instead
    // would also count whatever the flood got while the event was being fanned out, which depends
    // on the machine's speed. A delivery never seen refused was admitted at once, or waited less
    // than a poll: none is counted ahead of it (a share not kept would make it wait seconds).
    const quiet = ['acct-share-b', 'acct-share-c'];
    const firstRefused = new Map<string, number>();
    const { asking, waiting } = hostCapKeys(shared.api.prefix, new URL(receiver.url).hostname);
    const redis = shared.api.app.redis;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const [askers, waiters] = await Promise.all([
          redis.zrange(asking, 0, -1, 'WITHSCORES'),
          redis.zrange(waiting, 0, -1, 'WITHSCORES'),
        ]);
        const seen = [...pairs(askers), ...pairs(waiters).map(([m, at]) => [m.split('\t')[0]!, at] as const)];
        for (const [account, at] of seen)
          if (quiet.includes(account))
            firstRefused.set(account, Math.min(at, firstRefused.get(account) ?? at));
        await sleep(5);
      }
    })();
    for (const account of quiet) await publish(account);

    const flood = () => receiver.requests.filter((r) => r.path.startsWith('/share-flood/'));
    try {
      await waitFor(
        'every delivery',
        () =>
          flood().length === 60 && quiet.every((account) => receiver.at(`/share/${account}`).length === 1),
      );
    } finally {
      watching = false;
      await watch;
    }
    for (const account of quiet) {
      const arrived = receiver.at(`/share/${account}`)[0]!.at;
      const refused = firstRefused.get(account) ?? arrived;
      // First come at a freed slot (the accounts' shares switched off), 13 to 21 of the flood's
      // went ahead of it; with its share, 1 or 2 (measured).
      const ahead = flood().filter((r) => r.at > refused && r.at < arrived).length;
      expect(ahead).toBeLessThanOrEqual(cap);
    }
  });
});

/** A ZRANGE … WITHSCORES reply as [member, score] pairs. */
function pairs(reply: string[]): Array<readonly [string, number]> {
  const out: Array<readonly [string, number]> = [];
  for (let i = 0; i < reply.length; i += 2) out.push([reply[i]!, Number(reply[i + 1])]);
  return out;
}

describe('a delivery its subscription holds back', () => {
  it("keeps none of its host's slots: another subscription on that host gets it at once", async () => {
    const slowAfterMs = 1_500;
    const slowPath = '/slow-subscription';
    stack.receiver.script(slowPath, [
      { status: 200, afterMs: slowAfterMs },
      { status: 200, afterMs: slowAfterMs },
    ]);
    const slow = await stack.subscribe('acct-host-slow', {
      callback_url: `${stack.receiver.url}${slowPath}`,
    });
    const otherPath = '/other-subscription';
    await stack.subscribe('acct-host-other', { callback_url: `${stack.receiver.url}${otherPath}` });
    const publish = (accountId: string) =>
      stack.publisher.publish({ accountId, type: 'call.completed', data: {} });

    await publish('acct-host-slow');
    await waitFor('the slow callback has its first delivery', () => stack.receiver.at(slowPath).length === 1);
    // Its second delivery waits for the subscription's one slot, and must hold no host slot meanwhile.
    await publish('acct-host-slow');
    const { parked } = subscriptionGateKeys(stack.api.prefix, slow.id);
    await waitFor(
      'the second delivery held back',
      async () => (await stack.api.app.redis.zcard(parked)) === 1,
    );

    await publish('acct-host-other');
    await waitFor('the other subscription has its delivery', () => stack.receiver.at(otherPath).length === 1);
    const firstSlow = stack.receiver.at(slowPath)[0]!;
    expect(stack.receiver.at(otherPath)[0]!.at).toBeLessThan(firstSlow.at + slowAfterMs);
  });
});

describe('a retry after its subscription’s callback moved to another host', () => {
  it('counts in the new host’s cap while in flight, and in the old one’s no more', async () => {
    // A second receiver on another loopback address: another host to the cap. It holds its answer.
    let answer = () => {};
    let arrive = () => {};
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    const server = createServer((_request, response) => {
      answer = () => response.end('ok');
      arrive();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const movedPort = (server.address() as AddressInfo).port;
    const account = 'acct-host-moved';
    const failPath = '/moving-callback';
    stack.receiver.script(failPath, [{ status: 500 }]);
    const created = await stack.subscribe(account, { callback_url: `${stack.receiver.url}${failPath}` });
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
    await waitFor('the first attempt failed', () => stack.receiver.at(failPath).length === 1);
    const moved = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${created.id}`,
      headers: stack.api.auth(account),
      payload: { callback_url: `http://127.0.0.2:${movedPort}/moved` },
    });
    expect(moved.statusCode).toBe(200);

    await arrived;
    const holders = async (hostname: string) =>
      (await stack.api.app.redis.zrange(hostCapKeys(stack.api.prefix, hostname).leases, 0, -1)).filter(
        (member) => member.startsWith(`${account}\t`),
      );
    expect(await holders('127.0.0.2')).toHaveLength(1);
    expect(await holders(new URL(stack.receiver.url).hostname)).toEqual([]);
    answer();
    await waitFor('the moved host’s slot given back', async () => (await holders('127.0.0.2')).length === 0);
    server.close();
  });
});

describe('the wait of an attempt over its host cap, when no freed slot wakes it', () => {
  it('is 250 to 750 ms, spread by the random number', () => {
    expect(hostWaitMs(0)).toBe(250);
    expect(hostWaitMs(0.5)).toBe(500);
    expect(hostWaitMs(0.999)).toBe(750);
  });
});

describe('what the cap counts a host as', () => {
  it.each([
    ['hooks.slack.com', 'slack.com'],
    ['HOOKS.Slack.com.', 'slack.com'],
    ['a.b.victim.com', 'victim.com'],
    ['victim.com', 'victim.com'],
    ['x.herokuapp.com', 'x.herokuapp.com'],
    ['example.co.uk', 'example.co.uk'],
    ['203.0.113.7', '203.0.113.7'],
    ['[2001:db8::1]', '[2001:db8::1]'],
    ['localhost.', 'localhost'],
  ])('%s as %s', (hostname, key) => {
    expect(hostCapKey(hostname)).toBe(key);
  });
});

describe('where a host’s slots are kept on a Redis Cluster', () => {
  const hostnames = ['hooks.slack.com', '203.0.113.7', '[2001:db8::1]', 'a}b.example', 'a{b.example'];

  it('keeps them in the slot of the shard that asks, with its subscriptions’ gates, for one admission script', () => {
    for (const prefix of ['{webhooks}', '{webhooks:3}'])
      for (const hostname of hostnames) {
        const keys = [
          ...Object.values(hostCapKeys(prefix, hostname, 'sub-1')),
          ...Object.values(subscriptionGateKeys(prefix, 'sub-1')),
        ];
        expect(new Set(keys.map(keySlot))).toEqual(new Set([keySlot(prefix)]));
      }
  });

  it('keeps the keys of one host in one hash slot under an untagged prefix too', () => {
    for (const hostname of hostnames)
      expect(new Set(Object.values(hostCapKeys('webhooks', hostname)).map(keySlot)).size).toBe(1);
  });
});

describe('a host’s slots in each queue shard', () => {
  it('are HOST_MAX_IN_FLIGHT split over QUEUE_SHARDS, so that the shards together keep to it, and at least one', () => {
    expect(hostCapPerShard(200, 1)).toBe(200);
    expect(hostCapPerShard(200, 6)).toBe(33);
    expect(hostCapPerShard(2, 6)).toBe(1);
  });
});
