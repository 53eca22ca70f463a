/**
 * The clients kept for customer-owned roles, through the AWS publisher, moto and a proxy counting
 * each role's AssumeRole: one account's many subscriptions are held to its own bound while another
 * account's clients stay (its role is not assumed again) and its writes are confirmed; a set unused
 * past the idle time is let go (its role is assumed again at the next write).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { pino } from 'pino';
import type { BrokerTarget } from '@webhooks/shared';
import { createAwsPublisher } from '../src/destinations/aws.js';
import { startMoto, type Moto } from '../../../scripts/lib/moto.js';
import { startAwsProxy, type AwsProxy } from '../../../test/support/aws.js';

const region = 'eu-west-1';
const target: BrokerTarget = { type: 'sqs', broker: 'aws', queue: 'wh-bounds', messageGroup: '' };
let moto: Moto;
let proxyUrl: string;

/** AssumeRole calls by role ARN. */
const assumed = new Map<string, number>();
let proxy: AwsProxy;

beforeAll(async () => {
  moto = await startMoto();
  proxy = await startAwsProxy(
    () => moto.url,
    (_request, body) => {
      const form = new URLSearchParams(body.toString());
      if (form.get('Action') === 'AssumeRole') {
        const role = form.get('RoleArn') ?? '';
        assumed.set(role, (assumed.get(role) ?? 0) + 1);
      }
      return { kind: 'forward' };
    },
  );
  proxyUrl = proxy.url;
  const sqs = new SQSClient({ region, endpoint: moto.url });
  await sqs.send(new CreateQueueCommand({ QueueName: 'wh-bounds' }));
  sqs.destroy();
}, 60_000);
afterAll(async () => {
  await moto.stop();
  await proxy.close();
});

const roleOf = (subscriptionId: string) => `arn:aws:iam::123456789012:role/${subscriptionId}`;

/** Writes one message as `subscriptionId` of `accountId`, with its own role; resolves with the error class. */
async function write(
  publisher: ReturnType<typeof createAwsPublisher>,
  accountId: string,
  subscriptionId: string,
) {
  const result = await publisher.publish(
    target,
    '{"type":"call.completed"}',
    {},
    {
      accountId,
      subscriptionId,
      deliveryId: `${subscriptionId}-delivery`,
      eventId: 'event-1',
      eventType: 'call.completed',
      occurredAt: new Date(),
      awsCredentials: { type: 'role', roleArn: roleOf(subscriptionId), externalId: 'x' },
    },
  );
  return result.errorClass;
}

describe("the clients kept for customers' roles", () => {
  it('hold one account to its bound while another account’s stay and are served', async () => {
    const publisher = createAwsPublisher(
      { url: proxyUrl, region, timeoutMs: 10_000, log: pino({ level: 'silent' }) },
      { perAccount: 2, total: 4, idleMs: 600_000 },
    );
    try {
      expect(await write(publisher, 'acct-b', 'b-1')).toBeNull();
      for (let n = 1; n <= 6; n += 1) expect(await write(publisher, 'acct-a', `a-${n}`)).toBeNull();
      // B's set was kept: its role is not assumed again.
      expect(await write(publisher, 'acct-b', 'b-1')).toBeNull();
      expect(assumed.get(roleOf('b-1'))).toBe(1);
      // A's first went past A's own bound: assumed again.
      expect(await write(publisher, 'acct-a', 'a-1')).toBeNull();
      expect(assumed.get(roleOf('a-1'))).toBe(2);
      expect(assumed.get(roleOf('a-6'))).toBe(1);
    } finally {
      await publisher.close();
    }
  });

  it('let a set unused past the idle time go', async () => {
    const publisher = createAwsPublisher(
      { url: proxyUrl, region, timeoutMs: 10_000, log: pino({ level: 'silent' }) },
      { perAccount: 2, total: 4, idleMs: 300 },
    );
    try {
      expect(await write(publisher, 'acct-c', 'c-1')).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await write(publisher, 'acct-c', 'c-1')).toBeNull();
      expect(assumed.get(roleOf('c-1'))).toBe(2);
    } finally {
      await publisher.close();
    }
  });
});
