/**
 * AWS destinations written with customer-owned credentials, through the real API, worker, PostgreSQL,
 * Redis and moto: a role assumed with the external id the API generated and showed once, its
 * credentials reused across attempts; a trust policy that refuses the external id fails the attempt
 * naming the role; access keys sealed at rest and never shown again. moto checks neither an
 * external id nor a role's existence, so a proxy in front of it enforces the trust policy's
 * `sts:ExternalId` condition, as STS does, and records which access key signed each request.
 */
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startMoto, type Moto } from '../scripts/lib/moto.js';
import { startTestStack, type TestStack } from './support/stack.js';
import {
  deliveryAttempted,
  receiveMessages,
  startAwsProxy,
  type AwsProxy,
  type ProxyDecision,
} from './support/aws.js';

const region = 'eu-west-1';
const writerRole = 'arn:aws:iam::123456789012:role/webhooks-writer';
const strictRole = 'arn:aws:iam::123456789012:role/webhooks-strict';
let moto: Moto;
let stack: TestStack;
let sqs: SQSClient;

/** The external id each role's trust policy requires, as the test learns them. */
const trusted = new Map<string, string>([[strictRole, 'an-id-no-subscription-has']]);
let assumeRoleCalls = 0;
/** The access key id that signed each SQS request. */
const signedBy: string[] = [];

/** What STS answers when a trust policy refuses (the Query API's error document). */
const accessDenied = `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error></ErrorResponse>`;

/** Refuses an AssumeRole whose external id is not the role's, as STS would; records SQS requests' signing keys. */
const enforceTrust = (request: IncomingMessage, body: Buffer): ProxyDecision => {
  const form = new URLSearchParams(body.toString());
  if (form.get('Action') === 'AssumeRole') {
    assumeRoleCalls += 1;
    if (form.get('ExternalId') !== trusted.get(form.get('RoleArn') ?? ''))
      return { kind: 'answer', status: 403, contentType: 'text/xml', body: accessDenied };
  } else {
    const key = /Credential=([A-Z0-9]+)\//.exec(request.headers.authorization ?? '')?.[1];
    if (key !== undefined) signedBy.push(key);
  }
  return { kind: 'forward' };
};
let proxy: AwsProxy;

beforeAll(async () => {
  moto = await startMoto();
  proxy = await startAwsProxy(() => moto.url, enforceTrust);
  sqs = new SQSClient({ region, endpoint: moto.url });
  stack = await startTestStack('aws-customer', {
    DESTINATION_BROKERS: JSON.stringify({
      customer: {
        type: 'aws',
        region,
        endpoint: proxy.url,
        require_customer_credentials: true,
      },
    }),
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '2',
  });
}, 60_000);
afterAll(async () => {
  await stack.close();
  sqs.destroy();
  await moto.stop();
  await proxy.close();
});

/** The bodies of `count` messages of queue `url`, each deleted once read. */
const receive = async (url: string, count: number) =>
  (await receiveMessages(sqs, url, count)).map((message) => message.Body!);

/** The subscription as `account` reads it. */
const read = async (account: string, id: string) =>
  (await stack.api.app.inject({ url: `/api/webhooks/${id}`, headers: stack.api.auth(account) })).json();

describe('an AWS destination with a role of the customer', () => {
  it('assumes it with the external id shown once, and writes as it, assuming it once for several deliveries', async () => {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: 'wh-customer' }))).QueueUrl!;
    const account = 'acct-role';
    const sub = await stack.subscribe(account, {
      destination: {
        type: 'sqs',
        broker: 'customer',
        queue: 'wh-customer',
        credentials: { type: 'role', role_arn: writerRole },
      },
    });
    const externalId = (sub.destination as { credentials: { external_id: string } }).credentials.external_id;
    expect(externalId).toMatch(/^[0-9a-f]{32}$/);
    expect((await read(account, sub.id)).destination.credentials).toEqual({
      type: 'role',
      role_arn: writerRole,
    });
    trusted.set(writerRole, externalId);
    assumeRoleCalls = 0;
    signedBy.length = 0;
    for (const n of [1, 2])
      await stack.publisher.publish({ accountId: account, type: 'call.completed', data: { n } });
    expect(await receive(url, 2)).toHaveLength(2);
    expect(assumeRoleCalls).toBe(1);
    // The role's temporary keys (ASIA…), not the deployment's own (AWS_ACCESS_KEY_ID).
    expect(signedBy.length).toBeGreaterThan(0);
    for (const key of signedBy) expect(key).toMatch(/^ASIA/);
  });

  it('fails the attempt, naming the role, when its trust policy refuses the external id', async () => {
    const account = 'acct-role-refused';
    const sub = await stack.subscribe(account, {
      destination: {
        type: 'sqs',
        broker: 'customer',
        queue: 'wh-customer',
        credentials: { type: 'role', role_arn: strictRole },
      },
    });
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
    const delivery = await deliveryAttempted(stack, sub.id);
    expect(delivery.attempts[0]).toMatchObject({
      errorClass: 'broker_refused',
      errorMessage: `STS refused to assume role "${strictRole}" (AccessDenied): its trust policy must allow this service with the subscription's external id`,
    });
  });
});

describe('an AWS destination with access keys of the customer', () => {
  it('writes with them, keeps the secret sealed and never shows it', async () => {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: 'wh-keys' }))).QueueUrl!;
    const account = 'acct-keys';
    const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const sub = await stack.subscribe(account, {
      destination: {
        type: 'sqs',
        broker: 'customer',
        queue: 'wh-keys',
        credentials: { type: 'access_key', access_key_id: 'AKIAIOSFODNN7EXAMPLE', secret_access_key: secret },
      },
    });
    expect((sub.destination as { credentials: unknown }).credentials).toEqual({
      type: 'access_key',
      access_key_id: 'AKIAIOSFODNN7EXAMPLE',
    });
    expect(JSON.stringify(await read(account, sub.id))).not.toContain(secret);
    const row = await stack.worker.prisma.subscription.findUniqueOrThrow({ where: { id: sub.id } });
    expect(row.destinationCredentials).not.toContain(secret);
    signedBy.length = 0;
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
    expect(await receive(url, 1)).toHaveLength(1);
    expect(signedBy).toContain('AKIAIOSFODNN7EXAMPLE');
  });
});

describe('credentials checked at create', () => {
  it.each([
    [{ type: 'sqs', broker: 'customer', queue: 'q' }, '/destination/credentials'],
    [
      {
        type: 'sqs',
        broker: 'customer',
        queue: 'q',
        credentials: { type: 'role', role_arn: 'webhooks-writer' },
      },
      '/destination/credentials/role_arn',
    ],
    [
      {
        type: 's3',
        broker: 'customer',
        bucket: 'wh-archive',
        endpoint: 'http://169.254.169.254',
        credentials: { type: 'role', role_arn: writerRole },
      },
      '/destination/endpoint',
    ],
  ])('refuses %j with problem details naming %s', async (destination, pointer) => {
    const answer = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth('acct-credentials-bad'),
      payload: { destination },
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors.map((e: { pointer: string }) => e.pointer)).toEqual([pointer]);
  });
});
