/**
 * The sandbox's bounds through the real API, worker, PostgreSQL, Redis and an HTTP receiver: a
 * run that spends its time in built-ins is ended by the host at its deadline, without holding up
 * another account's transformed deliveries; its heap cannot grow past its limit, even while the
 * result is read back, and the process's memory stays bounded over many such runs; the returned
 * webhook is capped; a returned URL meets every rule a `callback_url` meets; output the host cannot
 * read (an overridden `JSON.stringify`, nesting too deep) is a failed transformation, not a fault.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

const timeoutMs = 250;
/** What one run of {@link indexOfHog} takes without a deadline on a 2-core machine, in ms. */
const unboundedRunMs = 20_000;
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('transformation-limits', {
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '2',
    SUBSCRIPTION_DISABLE_AFTER: '1000',
    TRANSFORMATION_TIMEOUT_MS: String(timeoutMs),
    TRANSFORMATION_MEMORY_MB: '16',
    // A hundred transformation tests from one account, beside the others.
    RATE_LIMIT_PER_MINUTE: '100000',
  });
});
afterAll(() => stack.close(), 60_000);

/** 300 scans of a 15 MiB string: a few interpreter steps, each far past QuickJS's interrupt. */
const indexOfHog = `function handler(w) {
  const s = 'a'.repeat(15 * 1024 * 1024);
  let n = 0;
  for (let i = 0; i < 300; i++) n += s.indexOf('b');
  return w;
}`;

/** 64 × 1 MiB, under a 16 MiB heap; read back through `toJSON`, where the limit was once lifted. */
const allocator = `function handler(w) {
  w.payload = { toJSON() { const a = []; for (let i = 0; i < 64; i++) a.push(new ArrayBuffer(1 << 20)); return a.length; } };
  return w;
}`;

interface Attempt {
  error: string;
  error_message: string;
  duration_ms: number;
}

/**
 * The attempts of the one delivery of `subscriptionId`, once it is given up, read from the
 * database: polling the API would spend the account's request limit.
 */
async function givenUpAttempts(subscriptionId: string): Promise<Attempt[]> {
  const { prisma } = stack.worker;
  const delivery = await waitFor('the delivery given up', async () => {
    const row = await prisma.delivery.findFirst({ where: { subscriptionId } });
    return row?.status === 'failed' ? row : undefined;
  });
  const attempts = await prisma.deliveryAttempt.findMany({
    where: { deliveryId: delivery.id },
    orderBy: { attemptNumber: 'asc' },
  });
  return attempts.map((a) => ({
    error: a.errorClass ?? '',
    error_message: a.errorMessage ?? '',
    duration_ms: a.durationMs,
  }));
}

/** Tries `transformation` on a sample through `POST .../transformation-tests`. */
async function tryOn(account: string, subscriptionId: string, transformation: string) {
  const response = await stack.api.app.inject({
    method: 'POST',
    url: `/api/webhooks/${subscriptionId}/transformation-tests`,
    headers: stack.api.auth(account),
    payload: { payload: { type: 'call.completed', data: {} }, transformation },
  });
  return { status: response.statusCode, body: response.json() as { result: string; error?: string } };
}

describe('the CPU deadline', () => {
  it('ends a run spending its time in indexOf at its deadline, failing the attempt', async () => {
    const hog = await stack.subscribe('acct-index-of', {
      callback_url: `${stack.receiver.url}/index-of`,
      transformation: indexOfHog,
    });
    await stack.publisher.publish({ accountId: 'acct-index-of', type: 'call.completed', data: {} });
    const attempts = await givenUpAttempts(hog.id);
    expect(attempts).toHaveLength(2);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({ error: 'transformation_failed' });
      expect(attempt.error_message).toMatch(/time budget/);
      // Ended, not run out: without the host's deadline one run takes about 20 s here, 80 times
      // the deadline; a bound far from both tells them apart however loaded the machine is.
      expect(attempt.duration_ms).toBeLessThan(unboundedRunMs / 4);
    }
    expect(stack.receiver.at('/index-of')).toHaveLength(0);
  });

  it('does not hold another account’s transformed delivery behind one account’s runs', async () => {
    const hog = await stack.subscribe('acct-hog', {
      callback_url: `${stack.receiver.url}/hog`,
      transformation: indexOfHog,
    });
    await stack.subscribe('acct-quiet', {
      callback_url: `${stack.receiver.url}/quiet`,
      transformation: 'function handler(w) { w.payload = { text: "hi" }; return w; }',
    });
    for (let i = 0; i < 8; i++)
      await stack.publisher.publish({ accountId: 'acct-hog', type: 'call.completed', data: { i } });
    await stack.publisher.publish({ accountId: 'acct-quiet', type: 'call.completed', data: {} });
    await waitFor('the quiet account’s delivery', () => stack.receiver.at('/quiet').length === 1);
    expect(JSON.parse(stack.receiver.at('/quiet')[0]!.body)).toEqual({ text: 'hi' });
    const quietAt = stack.receiver.at('/quiet')[0]!.at;
    await waitFor('every run of the hog ended', async () => {
      const [{ attempts }] = await stack.api.app.prisma.$queryRaw<[{ attempts: number }]>`
        SELECT count(*)::int AS attempts FROM delivery_attempts a
        JOIN deliveries d ON d.id = a.delivery_id WHERE d.subscription_id = ${hog.id}::uuid`;
      return attempts === 16;
    });
    const [{ last }] = await stack.api.app.prisma.$queryRaw<[{ last: Date }]>`
      SELECT max(a.started_at) AS last FROM delivery_attempts a
      JOIN deliveries d ON d.id = a.delivery_id WHERE d.subscription_id = ${hog.id}::uuid`;
    expect(quietAt).toBeLessThan(last.getTime());
  });
});

describe('the pool shared between accounts', () => {
  it("gives another account's run the slot one account cannot take, ahead of that account's run behind its timed-out one", async () => {
    const hog = await stack.subscribe('acct-pool-hog', { callback_url: `${stack.receiver.url}/pool-hog` });
    const quiet = await stack.subscribe('acct-pool-quiet', {
      callback_url: `${stack.receiver.url}/pool-quiet`,
    });
    const ended: string[] = [];
    const runs = [
      tryOn('acct-pool-hog', hog.id, indexOfHog).then(() => ended.push('hog 1')),
      tryOn('acct-pool-hog', hog.id, indexOfHog).then(() => ended.push('hog 2')),
    ];
    // Both of the hog's runs are asked for first; one thread, two slots.
    await new Promise((resolve) => setImmediate(resolve));
    runs.push(
      tryOn('acct-pool-quiet', quiet.id, 'function handler(w) { return w; }').then(() => ended.push('quiet')),
    );
    await Promise.all(runs);
    // The hog holds one slot at a time, its thread's restart included: the quiet run goes before its second.
    expect(ended.at(-1)).toBe('hog 2');
    expect(ended).toContain('quiet');
  });
});

describe('memory and output', () => {
  it('cannot allocate 64 MiB under a 16 MiB heap, and the process stays bounded over 100 runs', async () => {
    const created = await stack.subscribe('acct-alloc', {
      callback_url: `${stack.receiver.url}/alloc`,
      transformation: allocator,
    });
    await stack.publisher.publish({ accountId: 'acct-alloc', type: 'call.completed', data: {} });
    const attempts = await givenUpAttempts(created.id);
    expect(attempts.map((a) => a.error_message)).toEqual([
      expect.stringMatching(/out of memory/),
      expect.stringMatching(/out of memory/),
    ]);
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 100; i++) {
      const { body } = await tryOn('acct-alloc', created.id, allocator);
      expect(body).toMatchObject({ result: 'failed', error: expect.stringMatching(/out of memory/) });
    }
    // 100 runs of 64 MiB each, had they been allowed; each thread's memory is capped near 36 MiB.
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    expect(stack.receiver.at('/alloc')).toHaveLength(0);
  });

  it('refuses a 48 MiB toJSON, and a returned webhook past TRANSFORMATION_MAX_BODY_BYTES', async () => {
    const created = await stack.subscribe('acct-big', { callback_url: `${stack.receiver.url}/big` });
    const huge = await tryOn(
      'acct-big',
      created.id,
      "function handler(w) { w.payload = { toJSON() { return 'x'.repeat(48 << 20); } }; return w; }",
    );
    expect(huge).toMatchObject({ status: 200, body: { result: 'failed' } });
    const large = await tryOn(
      'acct-big',
      created.id,
      "function handler(w) { w.payload = 'x'.repeat(600 * 1024); return w; }",
    );
    expect(large.body).toMatchObject({
      result: 'failed',
      error: expect.stringMatching(/larger than 524288 bytes/),
    });
  });
});

describe('a returned URL', () => {
  it('fails the attempt when it carries credentials, as a callback_url would be refused', async () => {
    const created = await stack.subscribe('acct-credentials', {
      callback_url: `${stack.receiver.url}/credentials`,
      transformation: `function handler(w) { w.url = ${JSON.stringify(`${stack.receiver.url.replace('://', '://user:pass@')}/moved`)}; return w; }`,
    });
    await stack.publisher.publish({ accountId: 'acct-credentials', type: 'call.completed', data: {} });
    const attempts = await givenUpAttempts(created.id);
    expect(attempts[0]).toMatchObject({ error: 'transformation_failed' });
    expect(attempts[0]!.error_message).toMatch(/must not carry credentials/);
    expect(stack.receiver.at('/moved')).toHaveLength(0);
  });
});

describe('output the host cannot read', () => {
  /** `JSON.stringify` overridden to return text that is not JSON. */
  const notJson = `JSON.stringify = () => '{"nope'; function handler(w) { return w; }`;
  /** An array nested far deeper than any parser's stack. */
  const deep = `function handler(w) { let a = []; for (let i = 0; i < 200000; i++) a = [a]; w.payload = a; return w; }`;

  it('fails the attempt as transformation_failed, counted, and answers transformation-tests with the failure', async () => {
    for (const [account, transformation, reason] of [
      ['acct-not-json', notJson, /not JSON/],
      ['acct-deep', deep, /nested too deeply|failed/],
    ] as const) {
      const created = await stack.subscribe(account, {
        callback_url: `${stack.receiver.url}/${account}`,
      });
      const tried = await tryOn(account, created.id, transformation);
      expect(tried.status).toBe(200);
      expect(tried.body).toMatchObject({ result: 'failed', error: expect.stringMatching(reason) });
      const updated = await stack.api.app.inject({
        method: 'PUT',
        url: `/api/webhooks/${created.id}`,
        headers: stack.api.auth(account),
        payload: { transformation },
      });
      // Saving runs only the top level, which both pass: the worker meets the failure.
      expect(updated.statusCode).toBe(200);
      await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
      const attempts = await givenUpAttempts(created.id);
      expect(attempts).toHaveLength(2);
      for (const attempt of attempts) expect(attempt).toMatchObject({ error: 'transformation_failed' });
      expect(stack.receiver.at(`/${account}`)).toHaveLength(0);
    }
  });
});
