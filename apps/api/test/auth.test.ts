import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSigner } from 'fast-jwt';
import { startTestApi, testJwtSecret, type TestApi } from '../../../test/support/api.js';
import { sleep } from '../../../scripts/lib/wait.js';
import { clockToleranceMs } from '../src/plugins/app/auth.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('auth', { RATE_LIMIT_PER_MINUTE: '5' });
});
afterAll(() => api.close());

const get = (authorization?: string, url = '/api/webhooks') =>
  api.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });

function unsigned(claims: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

describe('bearer token authentication', () => {
  const now = Math.floor(Date.now() / 1000);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const cases: Array<[string, string | undefined]> = [
    ['no Authorization header', undefined],
    ['a Basic credential', 'Basic dXNlcjpwYXNz'],
    ['an empty bearer', 'Bearer '],
    ['a malformed token', 'Bearer not.a.jwt'],
    ['garbage', 'Bearer %%%%'],
    [
      'a token signed with another secret',
      `Bearer ${createSigner({ key: 'another-secret-that-is-long-enough-1234' })({ sub: 'acme' })}`,
    ],
    ['alg none', `Bearer ${unsigned({ sub: 'acme', exp: now + 3600 })}`],
    [
      'an RS256 token',
      `Bearer ${createSigner({ key: rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), algorithm: 'RS256' })({ sub: 'acme' })}`,
    ],
    ['a token without sub', `Bearer ${createSigner({ key: testJwtSecret })({ scope: 'x' })}`],
    [
      'a token without iat',
      `Bearer ${createSigner({ key: testJwtSecret, noTimestamp: true })({ sub: 'acme', exp: now + 3600 })}`,
    ],
    [
      'a token issued longer than JWT_MAX_AGE_SECONDS ago, although its exp is ahead',
      `Bearer ${createSigner({ key: testJwtSecret })({ sub: 'acme', iat: now - 86_400 - 60, exp: now + 3600 })}`,
    ],
    [
      'a token not valid yet (nbf)',
      `Bearer ${createSigner({ key: testJwtSecret, notBefore: 3_600_000 })({ sub: 'acme' })}`,
    ],
  ];
  it.each(cases)('refuses %s with 401, WWW-Authenticate and a problem body', async (_, header) => {
    const response = await get(header);
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 401, title: 'Unauthorized' });
  });

  it('refuses a token once it expires, although it was accepted (and cached) before', async () => {
    const exp = Math.ceil(Date.now() / 1000) - 28; // inside the 30 s tolerance for 2 to 3 s more
    const authorization = `Bearer ${api.token('cached', { exp })}`;
    expect((await get(authorization)).statusCode).toBe(200);
    await sleep(exp * 1000 + clockToleranceMs + 100 - Date.now());
    const response = await get(authorization);
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/expired/);
  });

  it('refuses an expired token with 401 saying so', async () => {
    const response = await get(`Bearer ${api.token('acme', { exp: now - 60 })}`);
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/expired/);
  });

  it('guards every /api route, and sets no cookie', async () => {
    for (const [method, url] of [
      ['POST', '/api/webhooks'],
      ['POST', '/api/webhooks/calls'],
      ['POST', '/api/events'],
      ['GET', '/api/event-types'],
      ['DELETE', '/api/webhooks/01900000-0000-7000-8000-000000000000'],
    ] as const) {
      const response = await api.app.inject({ method, url, payload: {} });
      expect(response.statusCode).toBe(401);
    }
    const ok = await get(`Bearer ${api.token('acme')}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['set-cookie']).toBeUndefined();
  });
});

describe('tokens verified with JWT_PUBLIC_KEY', () => {
  it('accepts ES256 tokens of the key and refuses HS256 ones', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pub = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const keyed = await startTestApi('es256', { JWT_PUBLIC_KEY: pub, JWT_ALGORITHM: 'ES256' });
    try {
      const es = createSigner({
        key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        algorithm: 'ES256',
      });
      const good = await keyed.app.inject({
        method: 'GET',
        url: '/api/webhooks',
        headers: { authorization: `Bearer ${es({ sub: 'k', exp: Math.floor(Date.now() / 1000) + 60 })}` },
      });
      expect(good.statusCode).toBe(200);
      const hs = await keyed.app.inject({ method: 'GET', url: '/api/webhooks', headers: keyed.auth('k') });
      expect(hs.statusCode).toBe(401);
    } finally {
      await keyed.close();
    }
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After past RATE_LIMIT_PER_MINUTE, per account', async () => {
    const token = `Bearer ${api.token('busy')}`;
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 7; i++) {
      last = await get(token);
      statuses.push(last.statusCode);
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses.slice(5)).toEqual([429, 429]);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    expect(last!.json()).toMatchObject({ status: 429, title: 'Too Many Requests' });
    const other = await get(`Bearer ${api.token('quiet')}`);
    expect(other.statusCode).toBe(200);
  });
});

describe('health, readiness and documentation', () => {
  it('answers /healthz and /readyz without a token', async () => {
    expect((await api.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await api.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks).toEqual({ postgresql: 'ok', redis: 'ok' });
  });

  it('serves Swagger UI at /docs', async () => {
    const docs = await api.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).toMatch(/swagger/i);
  });

  it('serves an OpenAPI 3.1 document that validates', async () => {
    const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
    const document = (await api.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(document.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeDefined();
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/api/webhooks',
        '/api/webhooks/calls',
        '/api/webhooks/{id}',
        '/api/events',
        '/api/webhooks/{id}/deliveries',
      ]),
    );
  });

  it('names every operation with a unique operationId and a described tag, for SDK generators', async () => {
    const document = (await api.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const operations = Object.values(
      document.paths as Record<string, Record<string, { operationId?: string; tags?: string[] }>>,
    ).flatMap((path) => Object.values(path));
    const ids = operations.map((operation) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining([
        'createSubscription',
        'createCallsSubscription',
        'listSubscriptions',
        'rotateSigningSecret',
        'listDeliveries',
        'retryDelivery',
        'publishEvent',
      ]),
    );
    const described = new Set(
      (document.tags as Array<{ name: string; description: string }>)
        .filter((tag) => tag.description)
        .map((tag) => tag.name),
    );
    expect(operations.flatMap((operation) => operation.tags ?? []).every((tag) => described.has(tag))).toBe(
      true,
    );
    expect(document.info.license).toEqual({ name: 'MIT', identifier: 'MIT' });
  });

  it('answers unknown routes with a 404 problem', async () => {
    const response = await api.app.inject({ method: 'GET', url: '/nothing-here' });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
