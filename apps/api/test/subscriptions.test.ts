import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('subs');
});
afterAll(() => api.close());

const create = (account: string, payload: unknown, path = '/api/webhooks') =>
  api.app.inject({ method: 'POST', url: path, headers: api.auth(account), payload: payload as object });

const countRows = () => api.app.prisma.subscription.count();

describe('POST /api/webhooks', () => {
  it('creates a subscription: 201, Location, the resource with its signing secret', async () => {
    const response = await create('acme', {
      callback_url: 'https://client.example/hooks',
      webhook_id: 'crm',
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(response.headers.location).toBe(`/api/webhooks/${body.id}`);
    expect(body).toMatchObject({
      resource_uri: `/api/webhooks/${body.id}`,
      callback_url: 'https://client.example/hooks',
      webhook_id: 'crm',
      account_id: 'acme',
      kind: null,
      status: 'active',
      rate_limit: null,
      delivery: {
        in_flight_limit: 10,
        state: 'healthy',
        breaker: { state: 'closed', opened_at: null, retry_at: null },
      },
    });
    expect(body.event_types).toContain('message.failed');
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(body.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);

    const read = await api.app.inject({ method: 'GET', url: body.resource_uri, headers: api.auth('acme') });
    expect(read.statusCode).toBe(200);
    expect(read.json()).not.toHaveProperty('secret');
    const secret = await api.app.inject({
      method: 'GET',
      url: `${body.resource_uri}/secret`,
      headers: api.auth('acme'),
    });
    expect(secret.json()).toEqual({ secret: body.secret, previous_secret_expires_at: null });
  });

  it('creates a kind subscription at /api/webhooks/{kind}, limited to that kind', async () => {
    const response = await create(
      'acme',
      { callback_url: 'https://client.example/calls' },
      '/api/webhooks/calls',
    );
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({
      kind: 'calls',
      event_types: ['call.started', 'call.completed', 'call.failed'],
    });
  });

  it('answers 404 for a kind outside the catalogue', async () => {
    const before = await countRows();
    const response = await create(
      'acme',
      { callback_url: 'https://client.example/x' },
      '/api/webhooks/faxes',
    );
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await countRows()).toBe(before);
  });

  it('accepts account_id equal to the token subject, refuses another with 403', async () => {
    expect(
      (await create('acme', { callback_url: 'https://a.example/', account_id: 'acme' })).statusCode,
    ).toBe(201);
    const before = await countRows();
    const refused = await create('acme', { callback_url: 'https://a.example/', account_id: 'globex' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().errors).toEqual([expect.objectContaining({ pointer: '/account_id' })]);
    expect(await countRows()).toBe(before);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['missing callback_url', { webhook_id: 'x' }, '/callback_url'],
    ['a callback_url of the wrong type', { callback_url: 42 }, '/callback_url'],
    ['an unknown field', { callback_url: 'https://a.example/', colour: 'red' }, '/colour'],
    ['a relative callback_url', { callback_url: '/hooks' }, '/callback_url'],
    ['an ftp callback_url', { callback_url: 'ftp://a.example/hooks' }, '/callback_url'],
    ['a callback_url with credentials', { callback_url: 'https://user:pass@a.example/' }, '/callback_url'],
    [
      'a callback_url over 2048 characters',
      { callback_url: `https://a.example/${'x'.repeat(2048)}` },
      '/callback_url',
    ],
    [
      'a webhook_id over 255 characters',
      { callback_url: 'https://a.example/', webhook_id: 'w'.repeat(256) },
      '/webhook_id',
    ],
    ['a webhook_id of the wrong type', { callback_url: 'https://a.example/', webhook_id: 7 }, '/webhook_id'],
    ['a loopback callback', { callback_url: 'http://127.0.0.1:8080/hooks' }, '/callback_url'],
    ['an IPv6 loopback callback', { callback_url: 'http://[::1]/hooks' }, '/callback_url'],
    ['localhost', { callback_url: 'http://localhost:3000/hooks' }, '/callback_url'],
    ['a 10/8 callback', { callback_url: 'https://10.1.2.3/hooks' }, '/callback_url'],
    ['a 172.16/12 callback', { callback_url: 'https://172.20.0.1/hooks' }, '/callback_url'],
    ['a 192.168/16 callback', { callback_url: 'https://192.168.1.1/hooks' }, '/callback_url'],
    ['the metadata address', { callback_url: 'http://169.254.169.254/latest/meta-data' }, '/callback_url'],
    ['a unique-local IPv6 callback', { callback_url: 'http://[fd00::1]/hooks' }, '/callback_url'],
    ['an IPv4-mapped loopback', { callback_url: 'http://[::ffff:127.0.0.1]/hooks' }, '/callback_url'],
    ['localhost with a trailing dot', { callback_url: 'http://localhost.:3000/hooks' }, '/callback_url'],
    ['a single-label name', { callback_url: 'https://intranet/hooks' }, '/callback_url'],
    ['a .internal name', { callback_url: 'https://billing.internal/hooks' }, '/callback_url'],
    ['a .local name', { callback_url: 'https://printer.local/hooks' }, '/callback_url'],
    ['a Kubernetes service name', { callback_url: 'https://api.default.svc/hooks' }, '/callback_url'],
    ['port 22', { callback_url: 'https://a.example:22/hooks' }, '/callback_url'],
    ['port 25', { callback_url: 'http://a.example:25/hooks' }, '/callback_url'],
    ["Azure's host endpoint", { callback_url: 'http://168.63.129.16/machine' }, '/callback_url'],
  ];
  it.each(invalid)('refuses %s with 400 naming the field, writing nothing', async (_, payload, pointer) => {
    const before = await countRows();
    const response = await create('acme', payload);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = response.json();
    expect(problem).toMatchObject({
      status: 400,
      title: 'Bad Request',
      type: expect.any(String),
      detail: expect.any(String),
    });
    expect(problem.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    expect(await countRows()).toBe(before);
  });

  it('accepts a public name on an allowed port above 1023', async () => {
    expect((await create('acme', { callback_url: 'https://a.example:8443/hooks' })).statusCode).toBe(201);
  });

  it("refuses the operator's CALLBACK_DENY_CIDRS and ports outside CALLBACK_PORTS", async () => {
    const strict = await startTestApi('subs-policy', {
      CALLBACK_DENY_CIDRS: '1.2.3.0/24, 2606:4700::/32',
      CALLBACK_PORTS: '443',
    });
    try {
      const status = async (callback_url: string) =>
        (
          await strict.app.inject({
            method: 'POST',
            url: '/api/webhooks',
            headers: strict.auth('acme'),
            payload: { callback_url },
          })
        ).statusCode;
      expect(await status('https://1.2.3.4/hooks')).toBe(400);
      expect(await status('https://[2606:4700::1111]/hooks')).toBe(400);
      expect(await status('http://a.example/hooks')).toBe(400);
      expect(await status('https://8.8.8.8/hooks')).toBe(201);
    } finally {
      await strict.close();
    }
  });

  it('says in development which setting allows a local callback, and nowhere else', async () => {
    const local = { callback_url: 'http://localhost:4000/hooks' };
    expect((await create('acme', local)).json().detail).not.toMatch(/CALLBACK_ALLOW_PRIVATE/);
    const dev = await startTestApi('subs-dev', { NODE_ENV: 'development' });
    try {
      const refused = await dev.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: dev.auth('acme'),
        payload: local,
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().detail).toMatch(/CALLBACK_ALLOW_PRIVATE=true allows local callbacks/);
    } finally {
      await dev.close();
    }
  });

  it('refuses malformed JSON with 400', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: { ...api.auth('acme'), 'content-type': 'application/json' },
      payload: '{"callback_url": ',
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const response = await create('acme', {
      callback_url: 'https://a.example/',
      webhook_id: 'x'.repeat(1024 * 1024 + 10),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ status: 413 });
  });
});

describe('CALLBACK_ALLOW_PRIVATE=true', () => {
  it('accepts loopback callbacks for local development', async () => {
    const local = await startTestApi('private', { CALLBACK_ALLOW_PRIVATE: 'true' });
    try {
      const response = await local.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: local.auth('dev'),
        payload: { callback_url: 'http://127.0.0.1:4000/hooks' },
      });
      expect(response.statusCode).toBe(201);
    } finally {
      await local.close();
    }
  });
});

describe('MAX_SUBSCRIPTIONS_PER_ACCOUNT', () => {
  it('answers 409 past the cap, even to concurrent creates, and counts each account apart', async () => {
    const capped = await startTestApi('capped', { MAX_SUBSCRIPTIONS_PER_ACCOUNT: '3' });
    const createIn = (account: string) =>
      capped.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: capped.auth(account),
        payload: { callback_url: 'https://client.example/hooks' },
      });
    try {
      const statuses = (await Promise.all(Array.from({ length: 6 }, () => createIn('busy')))).map(
        (r) => r.statusCode,
      );
      expect(statuses.sort()).toEqual([201, 201, 201, 409, 409, 409]);
      const refused = await createIn('busy');
      expect(refused.json()).toMatchObject({ status: 409, type: '/problems/subscription-limit' });
      expect(await capped.app.prisma.subscription.count({ where: { accountId: 'busy' } })).toBe(3);
      expect((await createIn('quiet')).statusCode).toBe(201);
    } finally {
      await capped.close();
    }
  });
});

describe('GET /api/webhooks (pagination)', () => {
  const account = 'pager';
  beforeAll(async () => {
    for (let i = 0; i < 5; i++) await create(account, { callback_url: `https://p.example/${i}` });
    for (let i = 0; i < 3; i++)
      await create(account, { callback_url: `https://p.example/c${i}` }, '/api/webhooks/calls');
  });
  const list = (query: string, who = account) =>
    api.app.inject({ method: 'GET', url: `/api/webhooks${query}`, headers: api.auth(who) });

  it('answers an empty envelope for an account without subscriptions', async () => {
    const response = await list('', 'nobody');
    expect(response.json()).toEqual({ count: 0, next: null, previous: null, results: [] });
  });

  it('pages in creation order with next and previous links', async () => {
    const first = (await list('?page_size=3')).json();
    expect(first.count).toBe(8);
    expect(first.results.map((s: { callback_url: string }) => s.callback_url)).toEqual([
      'https://p.example/0',
      'https://p.example/1',
      'https://p.example/2',
    ]);
    expect(first.previous).toBeNull();
    expect(first.next).toBe('/api/webhooks?page=2&page_size=3');
    const third = (await list('?page=3&page_size=3')).json();
    expect(third.results).toHaveLength(2);
    expect(third.next).toBeNull();
    expect(third.previous).toBe('/api/webhooks?page=2&page_size=3');
  });

  it('has no next page when the count is an exact multiple of the page size', async () => {
    const page = (await list('?page=2&page_size=4')).json();
    expect(page.results).toHaveLength(4);
    expect(page.next).toBeNull();
  });

  it('answers 200 with empty results past the end', async () => {
    const response = await list('?page=9&page_size=4');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ count: 8, next: null, results: [] });
  });

  it('filters by type and carries the filter in the links', async () => {
    const page = (await list('?type=calls&page_size=2')).json();
    expect(page.count).toBe(3);
    expect(page.results.every((s: { kind: string }) => s.kind === 'calls')).toBe(true);
    expect(page.next).toBe('/api/webhooks?type=calls&page=2&page_size=2');
    const general = (await list('?type=all')).json();
    expect(general.count).toBe(5);
  });

  it('filters by status', async () => {
    const { results } = (await list('?page_size=1')).json();
    await api.app.inject({
      method: 'PUT',
      url: results[0].resource_uri,
      headers: api.auth(account),
      payload: { status: 'disabled' },
    });
    expect((await list('?status=disabled')).json().count).toBe(1);
    expect((await list('?status=active')).json().count).toBe(7);
  });

  it.each([
    '?page=0',
    '?page=abc',
    '?page_size=0',
    '?page_size=101',
    '?page=1.5',
    '?type=faxes',
    '?status=gone',
  ])('refuses %s with 400', async (query) => {
    const response = await list(query);
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.length).toBeGreaterThan(0);
  });
});

describe('GET, PUT and DELETE /api/webhooks/{id}', () => {
  it('updates callback_url, webhook_id and status; refuses unknown fields and bad values', async () => {
    const { resource_uri } = (
      await create('upd', { callback_url: 'https://u.example/1', webhook_id: 'a' })
    ).json();
    const put = (payload: unknown) =>
      api.app.inject({
        method: 'PUT',
        url: resource_uri,
        headers: api.auth('upd'),
        payload: payload as object,
      });
    const updated = await put({ callback_url: 'https://u.example/2', webhook_id: null, status: 'disabled' });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({
      callback_url: 'https://u.example/2',
      webhook_id: null,
      status: 'disabled',
    });
    expect(new Date(updated.json().updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(updated.json().created_at).getTime(),
    );

    for (const [payload, pointer] of [
      [{ kind: 'messages' }, '/kind'],
      [{ status: 'paused' }, '/status'],
      [{ callback_url: 'http://10.0.0.1/' }, '/callback_url'],
      [{}, '/'],
    ] as const) {
      const response = await put(payload);
      expect(response.statusCode).toBe(400);
      expect(response.json().errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    }
    const read = await api.app.inject({ method: 'GET', url: resource_uri, headers: api.auth('upd') });
    expect(read.json()).toMatchObject({ callback_url: 'https://u.example/2', status: 'disabled' });
  });

  it('deletes with 204, then answers 404', async () => {
    const { resource_uri } = (await create('del', { callback_url: 'https://d.example/' })).json();
    const deleted = await api.app.inject({ method: 'DELETE', url: resource_uri, headers: api.auth('del') });
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const response = await api.app.inject({
        method,
        url: resource_uri,
        headers: api.auth('del'),
        ...(method === 'PUT' ? { payload: { status: 'active' } } : {}),
      });
      expect(response.statusCode).toBe(404);
    }
  });

  it("answers 404 for another account's subscription, exactly as for a missing one, and changes nothing", async () => {
    const { id, resource_uri } = (await create('owner', { callback_url: 'https://o.example/' })).json();
    const missing = await api.app.inject({
      method: 'GET',
      url: '/api/webhooks/01900000-0000-7000-8000-000000000000',
      headers: api.auth('intruder'),
    });
    const requests = [
      { method: 'GET' as const, url: resource_uri },
      { method: 'GET' as const, url: `${resource_uri}/secret` },
      { method: 'POST' as const, url: `${resource_uri}/secret/rotate` },
      { method: 'GET' as const, url: `${resource_uri}/deliveries` },
      { method: 'PUT' as const, url: resource_uri, payload: { callback_url: 'https://evil.example/' } },
      { method: 'DELETE' as const, url: resource_uri },
    ];
    for (const request of requests) {
      const response = await api.app.inject({ ...request, headers: api.auth('intruder') });
      expect(response.statusCode).toBe(404);
      expect(response.json().title).toBe(missing.json().title);
    }
    const row = await api.app.prisma.subscription.findUniqueOrThrow({ where: { id } });
    expect(row.callbackUrl).toBe('https://o.example/');
    const listed = (
      await api.app.inject({ method: 'GET', url: '/api/webhooks', headers: api.auth('intruder') })
    ).json();
    expect(listed.count).toBe(0);
  });

  it.each(['not-a-uuid', '12345', "1' OR '1'='1", '00000000-0000-0000-0000-00000000000g'])(
    'answers 404 for the malformed id %s',
    async (id) => {
      const response = await api.app.inject({
        method: 'GET',
        url: `/api/webhooks/${encodeURIComponent(id)}`,
        headers: api.auth('acme'),
      });
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    },
  );

  it('rotates the signing secret, keeping the old one alive for 24 hours', async () => {
    const created = (await create('rot', { callback_url: 'https://r.example/' })).json();
    const before = Date.now();
    const rotated = await api.app.inject({
      method: 'POST',
      url: `${created.resource_uri}/secret/rotate`,
      headers: api.auth('rot'),
    });
    expect(rotated.statusCode).toBe(200);
    const { secret, previous_secret_expires_at } = rotated.json();
    expect(secret).not.toBe(created.secret);
    expect(secret).toMatch(/^whsec_/);
    const overlap = new Date(previous_secret_expires_at).getTime() - before;
    expect(overlap).toBeGreaterThan(23.9 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000 + 60_000);
  });
});
