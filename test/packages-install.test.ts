/**
 * The packages a user installs, installed as a user installs them: `npm pack` of
 * `@webhooks/publisher` and `@webhooks/client`, both tarballs installed with npm into a scratch
 * project outside the workspace, and a script there that subscribes with the client, publishes with
 * the publisher to a running service, and reads the delivery back with the client.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { testRedisUrl } from './support/redis.js';
import { startTestStack, type TestStack } from './support/stack.js';

const run = promisify(execFile);

/** What the scratch project's script does, with only the two installed packages. */
const script = `
import { createEventPublisher, loadCatalogue } from '@webhooks/publisher';
import { createWebhookClient } from '@webhooks/client';

const env = process.env;
const client = createWebhookClient({ baseUrl: env.API_URL, token: env.TOKEN });
const created = await client.POST('/api/webhooks', { body: { callback_url: env.CALLBACK_URL } });
const publisher = createEventPublisher({
  redis: env.REDIS_URL,
  prefix: env.QUEUE_PREFIX,
  catalogue: loadCatalogue(env.EVENT_CATALOGUE),
});
const event = await publisher.publish({ accountId: env.ACCOUNT, type: 'message.sent', data: { message_id: 'packed' } });
await publisher.close();
for (;;) {
  const { data } = await client.GET('/api/webhooks/{id}/deliveries', {
    params: { path: { id: created.data.id }, query: { status: 'succeeded' } },
  });
  if (data.count > 0) {
    console.log(JSON.stringify({ published: event.id, delivered: data.results[0].event_id }));
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
}
`;

let stack: TestStack;
let scratch: string;
beforeAll(async () => {
  stack = await startTestStack('packages');
  await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
  scratch = await mkdtemp(path.join(tmpdir(), 'webhooks-install-'));
});
afterAll(async () => {
  await stack.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('@webhooks/publisher and @webhooks/client outside the workspace', () => {
  it('install from their tarballs, publish an event to the service and read its delivery back', async () => {
    for (const name of ['publisher', 'client']) {
      await run('npm', ['pack', '--silent', '--pack-destination', scratch], {
        cwd: path.join(repositoryRoot(), 'packages', name),
      });
    }
    const tarballs = (await readdir(scratch)).filter((file) => file.endsWith('.tgz'));
    expect(tarballs.sort()).toEqual(['webhooks-client-0.1.0.tgz', 'webhooks-publisher-0.1.0.tgz']);
    await writeFile(
      path.join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch', private: true, type: 'module' }),
    );
    await run('npm', ['install', '--no-audit', '--no-fund', ...tarballs.map((file) => `./${file}`)], {
      cwd: scratch,
    });
    await writeFile(path.join(scratch, 'publish.mjs'), script);

    const { port } = stack.api.app.server.address() as AddressInfo;
    const { stdout } = await run(process.execPath, ['publish.mjs'], {
      cwd: scratch,
      timeout: 60_000,
      env: {
        PATH: process.env.PATH,
        API_URL: `http://127.0.0.1:${port}/`,
        TOKEN: stack.api.token('installed'),
        ACCOUNT: 'installed',
        CALLBACK_URL: `${stack.receiver.url}/installed`,
        REDIS_URL: testRedisUrl,
        QUEUE_PREFIX: stack.api.prefix,
        EVENT_CATALOGUE: path.resolve(repositoryRoot(), stack.api.config.catalogue.source),
      },
    });
    const { published, delivered } = JSON.parse(stdout.trim()) as { published: string; delivered: string };
    expect(delivered).toBe(published);
    const [request] = stack.receiver.at('/installed');
    expect(JSON.parse(request!.body)).toMatchObject({ type: 'message.sent', data: { message_id: 'packed' } });
  }, 180_000);
});
