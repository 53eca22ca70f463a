/**
 * `webhooks listen` as a developer runs it: the built executable against a running API and
 * worker, forwarding to a local receiver. Deliveries reach the local app signed as any callback
 * would receive them, the local app's answer is the attempt's (a 500 is retried, a 200 confirms),
 * and stopping it deletes its subscription; one killed leaves it to the reconciler once its stream
 * has been gone a while, and a live one's is kept. The stream and the replies refuse what is not
 * theirs. The stream answers at once; one account's streams are bounded so another's still open, an
 * idle one ends; deleting the subscription, or expunging the event, removes the relayed copies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { relayKeys, relaySession } from '@webhooks/shared';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { waitFor } from '../scripts/lib/wait.js';
import { testRedisUrl } from './support/redis.js';
import { startTestStack, type TestStack } from './support/stack.js';

let stack: TestStack;
let apiUrl: string;
const redis = new Redis(testRedisUrl);
beforeAll(async () => {
  stack = await startTestStack('cli-listen', {
    DELIVERY_BACKOFF_MS: '200',
    DELIVERY_MAX_ATTEMPTS: '5',
    // A stream gone this long leaves its subscription to the reconciler.
    LISTEN_ABANDONED_MS: '3000',
    LISTEN_MAX_PER_ACCOUNT: '2',
    // A stream that delivered nothing this long ends, and the CLI connects again.
    LISTEN_IDLE_MS: '2000',
    // Attempts wait for the CLI long enough to be seen in the session's stream.
    DELIVERY_TIMEOUT_MS: '8000',
  });
  await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
  apiUrl = `http://127.0.0.1:${(stack.api.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  redis.disconnect();
  await stack.close();
});

/** Starts `webhooks listen` for `account`; resolves with its process and output once it is ready. */
async function startListen(account: string, forwardTo: string, ...args: string[]) {
  const child: ChildProcess = spawn(
    process.execPath,
    [path.join(repositoryRoot(), 'packages/cli/dist/main.js'), 'listen', '--forward-to', forwardTo, ...args],
    {
      env: { PATH: process.env.PATH, WEBHOOKS_API_URL: apiUrl, WEBHOOKS_TOKEN: stack.api.token(account) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(...chunk.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (chunk: Buffer) => output.push(`stderr: ${chunk.toString()}`));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ready = await waitFor('listen ready', () => output.find((line) => line.startsWith('Ready:')));
  const [, id, secret] = /subscription (\S+), signing secret (\S+)\)/.exec(ready)!;
  return { child, output, exited, id: id!, secret: secret! };
}

describe('webhooks listen', () => {
  it("forwards deliveries to the local app, signed, with its answer as the attempt's, and deletes its subscription when stopped", async () => {
    let answer = 500;
    stack.receiver.script('/local', [() => answer]);
    const listen = await startListen('acct-listen', `${stack.receiver.url}/local`, '--events', 'call.*');
    try {
      const { id } = await stack.publisher.publish({
        accountId: 'acct-listen',
        type: 'call.started',
        data: { call_id: 'c-1' },
      });
      // The local app answers 500 first: the attempt fails as an HTTP 500 and is retried.
      await waitFor('the failed attempt', async () => {
        const attempts = await stack.worker.prisma.deliveryAttempt.findMany({
          where: { delivery: { subscriptionId: listen.id } },
        });
        return attempts.some((a) => a.statusCode === 500);
      });
      answer = 200;
      await waitFor('the delivery confirmed', async () => {
        const delivery = await stack.worker.prisma.delivery.findFirst({
          where: { subscriptionId: listen.id },
        });
        return delivery?.status === 'succeeded';
      });
      const received = stack.receiver.at('/local');
      expect(received.length).toBeGreaterThanOrEqual(2);
      const last = received.at(-1)!;
      expect(last.headers['webhook-id']).toBe(id);
      const verified = new Webhook(listen.secret).verify(last.body, last.headers as Record<string, string>);
      expect(verified).toMatchObject({ type: 'call.started', data: { call_id: 'c-1' } });
      expect(listen.output.filter((line) => line.includes(`call.started  ${id}  -> `))).toEqual([
        expect.stringMatching(/-> 500 {2}\d+ ms$/),
        ...Array(received.length - 2).fill(expect.stringMatching(/-> 500 {2}\d+ ms$/)),
        expect.stringMatching(/-> 200 {2}\d+ ms$/),
      ]);
      // A type it did not choose never reaches it.
      await stack.publisher.publish({ accountId: 'acct-listen', type: 'message.sent', data: {} });
    } finally {
      listen.child.kill('SIGINT');
    }
    expect(await listen.exited).toBe(0);
    expect(listen.output.at(-1)).toBe(`stopped; subscription ${listen.id} deleted`);
    expect(await stack.api.app.prisma.subscription.count({ where: { id: listen.id } })).toBe(0);
  }, 60_000);

  it('leaves the subscription of a CLI killed outright to the reconciler, once its stream is gone, and keeps a live one', async () => {
    const killed = await startListen('acct-killed', `${stack.receiver.url}/killed`);
    const live = await startListen('acct-live', `${stack.receiver.url}/live`);
    try {
      killed.child.kill('SIGKILL');
      await killed.exited;
      await waitFor(
        "the killed CLI's subscription swept",
        async () => {
          await stack.worker.reconcile();
          return (await stack.api.app.prisma.subscription.count({ where: { id: killed.id } })) === 0;
        },
        30_000,
        500,
      );
      expect(await stack.api.app.prisma.subscription.count({ where: { id: live.id } })).toBe(1);
    } finally {
      live.child.kill('SIGINT');
      await live.exited;
    }
  }, 60_000);

  it('refuses a stream or a reply for a subscription that is not a cli one, a reply no attempt waits for, and a cli destination on an update', async () => {
    const http = await stack.subscribe('acct-listen-2', { callback_url: `${stack.receiver.url}/plain` });
    const headers = stack.api.auth('acct-listen-2');
    const stream = await stack.api.app.inject({
      method: 'GET',
      url: `/api/webhooks/${http.id}/listen`,
      headers,
    });
    expect(stream.statusCode).toBe(409);
    const created = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers,
      payload: { destination: { type: 'cli' } },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      destination: { type: 'cli' },
      callback_url: expect.stringMatching(/^cli:\/\//),
    });
    const reply = await stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${created.json().id}/listen/replies`,
      headers,
      payload: { request_id: 'nobody', status: 200, error: null, body: null },
    });
    expect(reply.statusCode).toBe(404);
    // Credentials would travel into the relay stream: refused however the update is split.
    const withAuth = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${created.json().id}`,
      headers,
      payload: { auth: { type: 'basic', username: 'u', password: 'p' } },
    });
    expect(withAuth.statusCode).toBe(400);
    expect(withAuth.json().errors).toEqual([
      { pointer: '/auth', detail: 'applies to http destinations only' },
    ]);
    const update = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${http.id}`,
      headers,
      payload: { destination: { type: 'cli' } },
    });
    expect(update.statusCode).toBe(400);
    expect(update.json().errors).toEqual([
      { pointer: '/destination/type', detail: 'can be cli only when the subscription is created' },
    ]);
    const other = await stack.api.app.inject({
      method: 'GET',
      url: `/api/webhooks/${created.json().id}/listen`,
      headers: stack.api.auth('someone-else'),
    });
    expect(other.statusCode).toBe(404);
  });

  it('answers a stream at once, bounds the streams of one account while another still opens one, and ends an idle one', async () => {
    const open = async (account: string) => {
      const created = await stack.api.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: stack.api.auth(account),
        payload: { destination: { type: 'cli' } },
      });
      const controller = new AbortController();
      // Nothing is relayed to these sessions: the headers alone make the response.
      const response = await fetch(`${apiUrl}/api/webhooks/${created.json().id}/listen`, {
        headers: { authorization: `Bearer ${stack.api.token(account)}`, accept: 'text/event-stream' },
        signal: controller.signal,
      });
      return { response, close: () => controller.abort() };
    };
    const first = await open('acct-hog');
    const second = await open('acct-hog');
    const third = await open('acct-hog');
    const other = await open('acct-neighbour');
    try {
      expect(first.response.status).toBe(200);
      expect(first.response.headers.get('content-type')).toBe('text/event-stream');
      expect(second.response.status).toBe(200);
      expect(third.response.status).toBe(503);
      expect(third.response.headers.get('retry-after')).toBe('5');
      expect(await third.response.json()).toMatchObject({
        detail: expect.stringContaining('LISTEN_MAX_PER_ACCOUNT'),
      });
      expect(other.response.status).toBe(200);
      // With nothing to deliver, the stream ends after LISTEN_IDLE_MS, heartbeat or not.
      const text = await first.response.text();
      expect(text).not.toContain('event: delivery');
      // Its slot is free again.
      const again = await open('acct-hog');
      expect(again.response.status).toBe(200);
      again.close();
    } finally {
      for (const stream of [first, second, third, other]) stream.close();
    }
  }, 30_000);

  it("removes a session's relayed copies when its event is expunged and when its subscription is deleted", async () => {
    const account = 'acct-relay-copies';
    const created = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth(account),
      payload: { destination: { type: 'cli' } },
    });
    const { id, callback_url: callbackUrl } = created.json() as { id: string; callback_url: string };
    const keys = relayKeys(stack.api.prefix, relaySession(callbackUrl)!);
    const published = await Promise.all(
      ['c-1', 'c-2'].map((callId) =>
        stack.publisher.publish({ accountId: account, type: 'call.started', data: { call_id: callId } }),
      ),
    );
    // No CLI listens: both attempts wait in the session's stream.
    await waitFor('both attempts relayed', async () => (await redis.xlen(keys.requests)) === 2);
    const expunged = await stack.api.app.inject({
      method: 'DELETE',
      url: `/api/events/${published[0]!.id}/payload`,
      headers: stack.api.auth(account),
    });
    expect(expunged.statusCode).toBe(204);
    const left = await redis.xrange(keys.requests, '-', '+');
    expect(left).toHaveLength(1);
    expect(left[0]![1].join(' ')).toContain('c-2');
    expect(left[0]![1].join(' ')).not.toContain('c-1');

    const deleted = await stack.api.app.inject({
      method: 'DELETE',
      url: `/api/webhooks/${id}`,
      headers: stack.api.auth(account),
    });
    expect(deleted.statusCode).toBe(204);
    expect(await redis.exists(keys.requests, keys.bytes, keys.pending)).toBe(0);
  }, 30_000);
});
