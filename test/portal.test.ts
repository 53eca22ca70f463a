import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import AxeBuilder from '@axe-core/playwright';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { insertFailedDeliveries } from './support/failed-deliveries.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

/** Debian's chromium (scripts/ensure-chromium.sh installs it). */
const chromiumPath = '/usr/bin/chromium';

/** Where screenshots go (ignored by git); docs/portal.png is the committed one. */
const outputDir = path.join(repositoryRoot(), 'test-output');

let stack: TestStack;
let browser: Browser;
let origin: string;
beforeAll(async () => {
  // Two quick attempts, so a failing receiver gives a failed delivery within the test; a
  // transformation budget no busy CI machine exceeds with a one-line function.
  stack = await startTestStack('portal', {
    DELIVERY_MAX_ATTEMPTS: '2',
    DELIVERY_BACKOFF_MS: '50',
    TRANSFORMATION_TIMEOUT_MS: '2000',
    // A recovery's windows of 2 rounds a second, so a recovery of 3 meets the pace's 429.
    RECOVER_ROUNDS_PER_MINUTE: '120',
    // Named only: the broker tests below publish nothing.
    DESTINATION_BROKERS: JSON.stringify({
      events: { type: 'nats', url: 'nats://127.0.0.1:4222' },
      aws: { type: 'aws', region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' },
    }),
  });
  await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(stack.api.app.server.address() as AddressInfo).port}`;
  if (!existsSync(chromiumPath))
    throw new Error(`${chromiumPath} is missing: run bash scripts/ensure-chromium.sh`);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  await mkdir(outputDir, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await stack.close();
});

async function mintLink(account: string): Promise<string> {
  const response = await stack.api.app.inject({
    method: 'POST',
    url: '/api/portal-sessions',
    headers: stack.api.auth(account),
  });
  return origin + response.json().url;
}

/** A page in a context of its own (axe-core needs one), `width` px wide. */
async function openPage(width = 1440): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  return context.newPage();
}

/** A page opened with a fresh link of `account`, showing its subscription list. */
async function openPortal(account: string, width = 1440): Promise<Page> {
  const page = await openPage(width);
  await page.goto(await mintLink(account));
  await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
  return page;
}

/** Opens the page of the subscription with `callbackUrl` from the list. */
async function openSubscription(page: Page, callbackUrl: string): Promise<void> {
  await page.getByRole('link', { name: callbackUrl }).click();
  await page.getByRole('heading', { name: callbackUrl }).waitFor();
}

/** The first `count` requests `path` received, once they have arrived. */
async function waitForRequests(path: string, count: number) {
  await waitFor(`${count} requests at ${path}`, () => stack.receiver.at(path).length >= count);
  return stack.receiver.at(path);
}

async function seriousViolations(page: Page) {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
}

describe('the subscriber portal in a browser', () => {
  it('opens a minted link, forgets the token from the address bar and lists the subscriptions', async () => {
    await stack.subscribe('acme', { callback_url: `${stack.receiver.url}/acme`, webhook_id: 'crm' });
    await stack.subscribe('globex', { callback_url: `${stack.receiver.url}/globex` });
    for (const width of [375, 1440]) {
      const page = await openPage(width);
      await page.goto(await mintLink('acme'));
      await page.getByText(`${stack.receiver.url}/acme`).waitFor();
      expect(await page.getByText(`${stack.receiver.url}/globex`).count()).toBe(0);
      expect(new URL(page.url()).hash).toBe('');
      expect(await seriousViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(outputDir, `portal-${width}.png`), fullPage: true });
      await page.context().close();
    }
  });

  it('creates a subscription, showing the API’s validation error next to the field it names', async () => {
    const page = await openPortal('creator');
    await page.getByText('No subscriptions yet').waitFor();
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.getByLabel('Callback URL').fill('ftp://nowhere');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    const error = page.locator('#callback_url-error');
    await error.waitFor();
    expect(await page.getByLabel('Callback URL').getAttribute('aria-invalid')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);

    const callbackUrl = `${stack.receiver.url}/created`;
    await page.getByLabel('Events').selectOption('calls');
    await page.getByLabel('Callback URL').fill(callbackUrl);
    await page.getByLabel('webhook_id (optional)').fill('crm-calls');
    // Some of the kind's types, picked from the catalogue with their descriptions, and a filter.
    await page.getByLabel('All of them, including types added later').uncheck();
    await page.getByLabel('call.completed A call ended normally.').check();
    await page.getByRole('checkbox', { name: 'call.failed' }).check();
    expect(await page.getByRole('checkbox', { name: 'message.sent' }).count()).toBe(0);
    await page.getByLabel('Content filter (optional)').fill('{"data.direction": {"$where": "1"}}');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    expect(await page.locator('#filter-error').textContent()).toMatch(/\$where is not an allowed operator/);
    await page.getByLabel('Content filter (optional)').fill('{"data.direction": "inbound"}');
    await page.getByLabel('Ordering').selectOption('fifo');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.getByRole('heading', { name: callbackUrl }).waitFor();
    const listed = await stack.api.app.inject({ url: '/api/webhooks', headers: stack.api.auth('creator') });
    expect(listed.json().results).toMatchObject([
      {
        callback_url: callbackUrl,
        kind: 'calls',
        webhook_id: 'crm-calls',
        event_types: ['call.completed', 'call.failed'],
        filter: { 'data.direction': 'inbound' },
        ordering: 'fifo',
      },
    ]);
    await page.context().close();
  });

  it('sends a test event and shows it delivered, refreshing while it is pending', async () => {
    const callbackUrl = `${stack.receiver.url}/tested`;
    await stack.subscribe('tester', { callback_url: callbackUrl }, 'messages');
    const page = await openPortal('tester');
    await openSubscription(page, callbackUrl);
    await page.getByText('No deliveries yet').waitFor();
    await page.getByLabel('Event type').selectOption('message.received');
    await page.getByRole('button', { name: 'Send test event' }).click();
    const row = page.getByRole('row').filter({ hasText: 'message.received' });
    await row.getByText('succeeded').waitFor();
    expect(stack.receiver.at('/tested')).toHaveLength(1);
    expect(JSON.parse(stack.receiver.at('/tested')[0]!.body)).toMatchObject({ type: 'message.received' });
    expect(await seriousViolations(page)).toEqual([]);
    for (const width of [375, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({
        path: path.join(outputDir, `portal-subscription-${width}.png`),
        fullPage: true,
      });
    }
    await page.context().close();
  });

  it('shows the failed attempts of a failing receiver with its response body, and a retry that succeeds once fixed', async () => {
    const callbackUrl = `${stack.receiver.url}/failing`;
    stack.receiver.script('/failing', [{ status: 500, body: 'database is down' }]);
    await stack.subscribe('fixer', { callback_url: callbackUrl }, 'calls');
    const page = await openPortal('fixer');
    await openSubscription(page, callbackUrl);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('row').filter({ hasText: 'call.started' }).getByText('failed').waitFor();
    await page.getByRole('row').filter({ hasText: 'call.started' }).getByRole('link').click();
    await page.getByRole('heading', { name: 'Attempts' }).waitFor();
    expect(await page.getByText('HTTP 500', { exact: true }).count()).toBe(2);
    expect(await page.getByLabel('Response body of attempt 2').textContent()).toBe('database is down');
    expect(await seriousViolations(page)).toEqual([]);

    stack.receiver.script('/failing', [200]);
    await page.getByRole('button', { name: 'Retry delivery' }).click();
    await page.getByText('HTTP 200', { exact: true }).waitFor();
    await page.locator('.facts-list').getByText('succeeded').waitFor();
    expect(stack.receiver.at('/failing')).toHaveLength(3);
    await page.context().close();
  });

  it("shows the endpoint's health, its breaker and a chart of the last 24 hours' attempts", async () => {
    const callbackUrl = `${stack.receiver.url}/charted`;
    // Three confirmed deliveries, then one failed (both of its attempts).
    stack.receiver.script('/charted', [200, 200, 200, 500]);
    await stack.subscribe('charter', { callback_url: callbackUrl }, 'calls');
    for (let i = 0; i < 4; i++) {
      await stack.publisher.publish({ accountId: 'charter', type: 'call.started', data: { i } });
      await waitForRequests('/charted', i === 3 ? 5 : i + 1);
    }
    const page = await openPortal('charter');
    await openSubscription(page, callbackUrl);
    const panel = page.getByRole('region', { name: 'Endpoint health' });
    await panel.getByText('failed in a row').waitFor();
    expect(await panel.getByText('breaker closed').count()).toBe(1);
    expect(await panel.locator('.badge').textContent()).toBe('degraded');
    const chart = panel.getByRole('img', { name: /Attempts and p95 latency by hour/ });
    await chart.locator('canvas').waitFor();
    // uPlot's legend names the three series it draws.
    for (const series of ['confirmed', 'failed', 'p95 ms'])
      expect(await chart.getByText(series).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await chart.screenshot({ path: path.join(outputDir, 'portal-health-chart.png') });
    await page.context().close();
  });

  it("recovers every failed delivery since a time, waiting out the account's pace", async () => {
    const callbackUrl = `${stack.receiver.url}/recovered`;
    const sub = await stack.subscribe('recoverer', { callback_url: callbackUrl }, 'calls');
    await insertFailedDeliveries(stack, 'recoverer', sub.id, 3);
    const page = await openPortal('recoverer');
    await openSubscription(page, callbackUrl);
    // datetime-local takes the browser's local time, which is this process's.
    const since = new Date(Date.now() - 5 * 60_000);
    const local = new Date(since.getTime() - since.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Recover failed deliveries since').fill(local);
    await page.getByRole('button', { name: 'Recover' }).click();
    await page.getByText('3 failed or cancelled deliveries sent again.').waitFor();
    await waitForRequests('/recovered', 3);
    await page.context().close();
  });

  it('rotates the signing secret after a confirmation that the old one signs for 24 hours', async () => {
    const callbackUrl = `${stack.receiver.url}/rotated`;
    const created = await stack.subscribe('rotator', { callback_url: callbackUrl });
    const page = await openPortal('rotator');
    await openSubscription(page, callbackUrl);
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    expect(await page.getByLabel('Current signing secret').textContent()).toBe(created.secret);
    await page.getByRole('button', { name: 'Rotate secret…' }).click();
    await page.getByText(/keeps signing too, for 24 hours/).waitFor();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    await page.getByText(/previous secret keeps signing beside this one until/).waitFor();
    const rotated = await page.getByLabel('Current signing secret').textContent();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(created.secret);
    const read = await stack.api.app.inject({
      url: `/api/webhooks/${created.id}/secret`,
      headers: stack.api.auth('rotator'),
    });
    expect(read.json().secret).toBe(rotated);
    await page.context().close();
  });

  it('edits, disables, enables and deletes a subscription', async () => {
    const callbackUrl = `${stack.receiver.url}/edited`;
    const created = await stack.subscribe('editor', { callback_url: callbackUrl });
    const page = await openPortal('editor');
    await openSubscription(page, callbackUrl);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Rate limit (optional)').fill('0');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('#rate_limit-error').waitFor();
    await page.getByLabel('Rate limit (optional)').fill('5');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('at most 5/s').waitFor();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    const read = () =>
      stack.api.app.inject({ url: `/api/webhooks/${created.id}`, headers: stack.api.auth('editor') });
    expect((await read()).json()).toMatchObject({ status: 'disabled', rate_limit: 5 });
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete subscription' }).click();
    await page.getByText('No subscriptions yet').waitFor();
    expect((await read()).statusCode).toBe(404);
    await page.context().close();
  });

  it('sets the custom headers a gateway needs, shows them on request, and the deliveries carry them', async () => {
    const callbackUrl = `${stack.receiver.url}/gateway`;
    const created = await stack.subscribe('gateway', {
      callback_url: callbackUrl,
      headers: { 'x-old': 'o' },
    });
    const page = await openPortal('gateway');
    await openSubscription(page, callbackUrl);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('button', { name: 'Show current headers' }).click();
    // The field is there before the click: its value comes with the API's answer.
    await waitFor(
      'the current headers shown',
      async () => (await page.getByLabel('Custom headers').inputValue()) === 'x-old: o',
    ).catch(async (error: unknown) => {
      throw new Error(
        `${String(error)}; the field holds ${JSON.stringify(await page.getByLabel('Custom headers').inputValue())}`,
      );
    });
    await page.getByLabel('Custom headers').fill('Host: elsewhere');
    await page.getByRole('button', { name: 'Save changes' }).click();
    expect(await page.locator('#headers-error').textContent()).toMatch(/host/i);
    await page.getByLabel('Custom headers').fill('X-Gateway-Key: k1');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('button', { name: 'Edit' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await stack.publisher.publish({ accountId: 'gateway', type: 'call.completed', data: {} });
    const [delivered] = await waitForRequests('/gateway', 1);
    expect(delivered!.headers['x-gateway-key']).toBe('k1');
    expect(delivered!.headers['x-old']).toBeUndefined();
    const read = await stack.api.app.inject({
      url: `/api/webhooks/${created.id}`,
      headers: stack.api.auth('gateway'),
    });
    expect(read.json().headers).toEqual({ 'x-gateway-key': '********' });
    await page.context().close();
  });

  it('shows a broker destination, and edits the rest of its subscription without touching it', async () => {
    const created = await stack.subscribe('broker-owner', {
      destination: { type: 'nats', broker: 'events', subject: 'acme.calls' },
    });
    const page = await openPortal('broker-owner');
    await openSubscription(page, 'nats://events/acme.calls');
    await page.getByText('NATS events: JetStream subject acme.calls').first().waitFor();
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByText('the destination is changed through the API').waitFor();
    expect(await page.getByLabel('Callback URL').count()).toBe(0);
    await page.getByLabel('Rate limit (optional)').fill('7');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('at most 7/s').waitFor();
    const read = await stack.api.app.inject({
      url: `/api/webhooks/${created.id}`,
      headers: stack.api.auth('broker-owner'),
    });
    expect(read.json()).toMatchObject({
      rate_limit: 7,
      destination: { type: 'nats', broker: 'events', subject: 'acme.calls' },
    });
    await page.context().close();
  });

  it('creates a subscription delivering to an S3 bucket, showing the API’s error next to the field it names', async () => {
    const page = await openPortal('bucket-owner');
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.getByLabel('Deliver to').selectOption('s3');
    expect(await page.getByLabel('Callback URL').count()).toBe(0);
    await page.getByLabel('Broker').fill('aws');
    await page.getByLabel('Bucket').fill('Not_A_Bucket');
    await page.getByLabel('Key prefix (optional)').fill('hooks/');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    expect(await page.locator('#destination-bucket-error').textContent()).toMatch(/lower-case letters/);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Bucket').fill('wh-archive');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.getByText('Amazon S3 aws: bucket wh-archive, prefix hooks/').first().waitFor();
    const listed = await stack.api.app.inject({
      url: '/api/webhooks',
      headers: stack.api.auth('bucket-owner'),
    });
    expect(listed.json().results).toMatchObject([
      {
        destination: {
          type: 's3',
          broker: 'aws',
          bucket: 'wh-archive',
          prefix: 'hooks/',
          key: '{prefix}{yyyy}/{mm}/{dd}/{event_type}/{delivery_id}.json',
        },
      },
    ]);
    await page.context().close();
  });

  it("shows a broker's acknowledged publish as confirmed, not as a missing answer", async () => {
    // A stream of its own on the machine's NATS, for a subject no other run uses.
    const subject = `portal.${randomUUID()}`;
    const stream = `portal-${randomUUID()}`;
    const nats = await connect({ servers: 'nats://127.0.0.1:4222' });
    const jsm = await jetstreamManager(nats);
    await jsm.streams.add({ name: stream, subjects: [subject] });
    try {
      await stack.subscribe(
        'broker-sender',
        { destination: { type: 'nats', broker: 'events', subject } },
        'calls',
      );
      const page = await openPortal('broker-sender');
      await openSubscription(page, `nats://events/${subject}`);
      await page.getByRole('button', { name: 'Send test event' }).click();
      const row = page.getByRole('row').filter({ hasText: 'call.started' });
      await row.getByText('succeeded').waitFor();
      await row.getByRole('link').click();
      await page.getByRole('heading', { name: 'Attempts' }).waitFor();
      await page.getByText('acknowledged', { exact: true }).waitFor();
      expect(await page.getByText('no answer').count()).toBe(0);
      await page.context().close();
    } finally {
      await jsm.streams.delete(stream);
      await nats.close();
    }
  });

  it('writes a transformation, tries it on a catalogue example, and saves it', async () => {
    const callbackUrl = `${stack.receiver.url}/transformed`;
    const created = await stack.subscribe('shaper', { callback_url: callbackUrl }, 'calls');
    const page = await openPortal('shaper');
    await openSubscription(page, callbackUrl);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page
      .getByLabel('Transformation (optional)')
      .fill('function handler(w) { w.payload = { text: w.event_type }; return w; }');
    await page.getByRole('button', { name: /Try it on a call\.\w+ example/ }).click();
    const tried = page.locator('form [role=status]');
    await tried.waitFor();
    expect(await tried.textContent()).toContain('"text": "call.');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('button', { name: 'Edit' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    const read = await stack.api.app.inject({
      url: `/api/webhooks/${created.id}`,
      headers: stack.api.auth('shaper'),
    });
    expect(read.json().transformation).toMatch(/w\.payload = \{ text: w\.event_type \}/);
    await page.context().close();
  });

  it('lists the events and shows where one went, across subscriptions', async () => {
    for (const name of ['one', 'two'])
      await stack.subscribe('eventful', { callback_url: `${stack.receiver.url}/eventful/${name}` });
    const { id } = await stack.publisher.publish({
      accountId: 'eventful',
      type: 'call.completed',
      data: { n: 1 },
    });
    await waitForRequests('/eventful/one', 1);
    await waitForRequests('/eventful/two', 1);
    const page = await openPortal('eventful');
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByRole('link', { name: id }).click();
    await page.getByRole('heading', { name: `Event ${id}` }).waitFor();
    const rows = page.getByRole('row').filter({ hasText: 'succeeded' });
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('shows the event catalogue with example payloads and how to verify signatures', async () => {
    const page = await openPortal('reader');
    await page
      .getByRole('navigation', { name: 'Portal' })
      .getByRole('link', { name: 'Event catalogue' })
      .click();
    await page.getByRole('heading', { name: 'Verifying signatures' }).waitFor();
    await page.getByText('call.completed', { exact: true }).click();
    expect(await page.getByLabel('Example payload of call.completed').textContent()).toContain(
      'duration_seconds',
    );
    expect(await page.getByLabel('Verification example').textContent()).toContain("from 'standardwebhooks'");
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('says when the link has expired or was used, and what to do', async () => {
    const link = await mintLink('acme');
    const used = await openPage();
    await used.goto(link);
    await used.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await used.context().close();
    const page = await openPage();
    await page.goto(link);
    await page
      .getByRole('alert')
      .getByText(/link has expired/)
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('serves every asset itself, under a Content-Security-Policy limited to its origin', async () => {
    const page = await openPage();
    const hosts = new Set<string>();
    page.on('request', (request) => hosts.add(new URL(request.url()).origin));
    const response = await page.goto(`${origin}/portal/`);
    await page.getByText('No portal session').waitFor();
    expect([...hosts]).toEqual([origin]);
    expect(response!.headers()['content-security-policy']).toMatch(/default-src 'self'/);
    await page.context().close();
  });
});
