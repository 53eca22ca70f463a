import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { startTestStack, type TestStack } from './support/stack.js';

/** Debian's chromium (scripts/ensure-chromium.sh installs it). */
const chromiumPath = '/usr/bin/chromium';

/** Where screenshots go (ignored by git); docs/portal.png is the committed one. */
const outputDir = path.join(repositoryRoot(), 'test-output');

let stack: TestStack;
let browser: Browser;
let origin: string;
beforeAll(async () => {
  stack = await startTestStack('portal');
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

  it('says when the link has expired, and what to do', async () => {
    const expired = stack.api.portalToken('acme', -120);
    const page = await openPage();
    await page.goto(`${origin}/portal/#token=${expired}`);
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
