/**
 * The `webhooks` CLI as a user runs it: the built executable against a running API, with its
 * token in WEBHOOKS_TOKEN.
 */
import { execFile, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { waitFor } from '../scripts/lib/wait.js';
import { startTestStack, type TestStack } from './support/stack.js';

const run = promisify(execFile);
const cli = () => path.join(repositoryRoot(), 'packages/cli/dist/main.js');

let stack: TestStack;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  stack = await startTestStack('cli', {
    DELIVERY_MAX_ATTEMPTS: '1',
    // Named only: the destination created below receives nothing.
    DESTINATION_BROKERS: JSON.stringify({
      aws: { type: 'aws', region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' },
    }),
  });
  await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = stack.api.app.server.address() as AddressInfo;
  env = {
    PATH: process.env.PATH,
    WEBHOOKS_API_URL: `http://127.0.0.1:${port}`,
    WEBHOOKS_TOKEN: stack.api.token('cli-user'),
  };
});
afterAll(() => stack.close());

const webhooks = async (...args: string[]) =>
  (await run(process.execPath, [cli(), ...args], { env, timeout: 30_000 })).stdout.trim();

describe('the webhooks CLI', () => {
  it('creates, lists and deletes subscriptions, and triggers a test event', async () => {
    const [id, secret] = (
      await webhooks('subscriptions', 'create', `${stack.receiver.url}/cli`, '--events', 'call.*')
    ).split(/\s+/);
    expect(secret).toMatch(/^whsec_/);
    expect(await webhooks('subscriptions', 'list')).toContain(`${id}  active`);
    expect(await webhooks('subscriptions', 'list', '--type', 'message.sent')).not.toContain(id);

    expect(await webhooks('trigger', 'call.completed')).toMatch(
      new RegExp(`^sent call\\.completed to ${id} \\(event `),
    );
    await waitFor('the test event', () => stack.receiver.at('/cli').length === 1);
    expect(JSON.parse(stack.receiver.at('/cli')[0]!.body)).toMatchObject({ type: 'call.completed' });

    expect(await webhooks('subscriptions', 'delete', id!)).toBe(`deleted ${id}`);
    expect(await webhooks('subscriptions', 'list')).not.toContain(id);
  });

  it('creates a subscription delivering to a destination given as JSON, and says which field is wrong', async () => {
    const [id] = (
      await webhooks(
        'subscriptions',
        'create',
        '--destination',
        '{"type": "kinesis", "broker": "aws", "stream": "calls", "partition_key": "/data/call_id"}',
      )
    ).split(/\s+/);
    const read = await stack.api.app.inject({
      url: `/api/webhooks/${id}`,
      headers: stack.api.auth('cli-user'),
    });
    expect(read.json().destination).toEqual({
      type: 'kinesis',
      broker: 'aws',
      stream: 'calls',
      partition_key: '/data/call_id',
    });
    const refused = await run(
      process.execPath,
      [cli(), 'subscriptions', 'create', '--destination', '{"type": "s3", "broker": "aws", "bucket": "A"}'],
      { env },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/destination\/bucket must NOT have fewer than 3 characters\n$/),
    });
    const notJson = await run(process.execPath, [cli(), 'subscriptions', 'create', '--destination', 'sqs'], {
      env,
    }).catch((error: { code: number; stderr: string }) => error);
    expect(notJson).toMatchObject({ code: 1, stderr: expect.stringMatching(/not JSON/) });
  });

  it('says which call failed and exits 1', async () => {
    const failed = run(process.execPath, [cli(), 'trigger', 'nope.nope'], { env }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    const { code, stderr } = (await failed) as { code: number; stderr: string };
    expect(code).toBe(1);
    expect(stderr).toMatch(/^webhooks: /);
    const noToken = await run(process.execPath, [cli(), 'subscriptions', 'list'], {
      env: { PATH: process.env.PATH },
    }).catch((error: { code: number; stderr: string }) => error);
    expect(noToken).toMatchObject({
      code: 1,
      stderr: 'webhooks: no token: pass --token or set WEBHOOKS_TOKEN\n',
    });
  });

  it('tails deliveries as they happen, failed ones alone with --status failed', async () => {
    stack.receiver.script('/tail-bad', [500]);
    const good = await stack.subscribe('cli-user', { callback_url: `${stack.receiver.url}/tail-good` });
    const bad = await stack.subscribe('cli-user', { callback_url: `${stack.receiver.url}/tail-bad` });
    const since = new Date().toISOString();
    await stack.publisher.publish({
      accountId: 'cli-user',
      type: 'call.completed',
      data: { call_id: 'tail' },
    });
    const args = ['deliveries', 'tail', '--status', 'failed', '--interval', '200', '--since', since];
    const tail = spawn(process.execPath, [cli(), ...args], { env });
    let out = '';
    tail.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await waitFor('the failed delivery in the tail', () => out.includes(`subscription=${bad.id}`));
      expect(out).toMatch(/call\.completed\s+failed\s+attempts=1\s+answer=500/);
      expect(out).not.toContain(good.id);
    } finally {
      tail.kill('SIGINT');
    }
  });
});
