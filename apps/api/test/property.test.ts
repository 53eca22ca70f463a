/**
 * A property-based test of the front door with fast-check. Every operation is
 * driven over a real HTTP listener with generated bodies, query strings, path spellings
 * (percent-encoding, dot segments, double slashes, absolute-form targets, case changes), headers
 * and credentials (none, invalid, valid). Properties, while PostgreSQL and Redis are up:
 * - never a 5xx;
 * - never a 2xx without a valid token;
 * - a 4xx leaves the row counts and queue lengths as they were.
 * The seed is fixed (PROPERTY_SEED overrides it) and runs are bounded (PROPERTY_RUNS per
 * operation); on failure fast-check prints the seed and the shrunk counter-example.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, it } from '@jest/globals';
import { Queue } from 'bullmq';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createTokenMinter } from '../src/index.js';
import { startTestApi, testJwtSecret, type TestApi } from '../../../test/support/api.js';
import { rawRequest } from '../../../test/support/raw-http.js';
import { testRedisUrl } from '../../../test/support/redis.js';

const seed = Number(process.env.PROPERTY_SEED ?? 20261121);
const numRuns = Number(process.env.PROPERTY_RUNS ?? 200);

let api: TestApi;
let port: number;
let redis: Redis;
let queues: Queue[];
let db: pg.Client;
let ownSubscription: string;
let ownDelivery: string;

beforeAll(async () => {
  api = await startTestApi('property', { RATE_LIMIT_PER_MINUTE: '1000000000' });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  port = (api.app.server.address() as AddressInfo).port;
  redis = new Redis(testRedisUrl);
  queues = ['events', 'deliveries'].map((name) => new Queue(name, { connection: redis, prefix: api.prefix }));
  db = new pg.Client({ connectionString: api.database.url });
  await db.connect();
  const created = await api.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: api.auth('owner'),
    payload: { callback_url: 'https://example.com/hooks' },
  });
  ownSubscription = created.json().id;
  // A failed delivery of the owner's, so the delivery routes (retry included) have one to find.
  const { rows } = await db.query<{ id: string }>(
    `WITH e AS (
       INSERT INTO events (id, account_id, type, data, occurred_at)
       VALUES (uuid_generate_v7(), 'owner', 'call.completed', '{}', now()) RETURNING id)
     INSERT INTO deliveries (id, event_id, subscription_id, status, attempts_made, updated_at)
     SELECT delivery_id(e.id, $1::uuid), e.id, $1::uuid, 'failed', 5, now() FROM e RETURNING id::text`,
    [ownSubscription],
  );
  ownDelivery = rows[0]!.id;
});
afterAll(async () => {
  await Promise.all(queues.map((queue) => queue.close()));
  redis.disconnect();
  await db.end();
  await api.close();
});

/** What a refused request must not change: rows of every table, and jobs of every queue. */
async function footprint(): Promise<string> {
  const { rows } = await db.query(
    `SELECT (SELECT count(*) FROM subscriptions) s, (SELECT count(*) FROM events) e,
            (SELECT count(*) FROM deliveries) d, (SELECT count(*) FROM delivery_attempts) a,
            (SELECT string_agg(id::text || secret || status || callback_url || coalesce(webhook_id, ''), ',' ORDER BY id) FROM subscriptions) v`,
  );
  const jobs = await Promise.all(queues.map((queue) => queue.getJobCounts()));
  return JSON.stringify([rows[0], jobs]);
}

const operations: Array<[method: string, template: string]> = [
  ['GET', '/api/event-types'],
  ['POST', '/api/webhooks'],
  ['POST', '/api/webhooks/calls'],
  ['POST', '/api/webhooks/messages'],
  ['GET', '/api/webhooks'],
  ['GET', '/api/webhooks/{id}'],
  ['PUT', '/api/webhooks/{id}'],
  ['GET', '/api/webhooks/{id}/secret'],
  ['POST', '/api/webhooks/{id}/secret/rotate'],
  ['POST', '/api/events'],
  ['GET', '/api/webhooks/{id}/deliveries'],
  ['GET', '/api/webhooks/{id}/deliveries/{delivery}'],
  ['POST', '/api/webhooks/{id}/deliveries/{delivery}/retry'],
  // Last: once it has deleted the owner's subscription, the routes above would only find nothing.
  ['DELETE', '/api/webhooks/{id}'],
];

/** `usual` three times in four, else one of `rare`: most requests should reach their route. */
const mostly = <T>(usual: T, rare: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: rare });

/** Every byte of the UTF-8 form of `text` percent-encoded (a lone surrogate becomes U+FFFD's bytes). */
const percentEncode = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

/** Text with what breaks storage and parsers: NUL, lone surrogates, any code unit. */
const hostileText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '\u0000',
    '\ud800',
    'a\udc00b',
    '%00',
    '%ED%A0%80',
    '%C0%AE',
    '../',
    ' ',
    '1e300',
    '-1',
    'x'.repeat(3000),
  ),
);
const hostileValue = fc.oneof(
  hostileText,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(hostileText, hostileText, { maxKeys: 3 }),
);
const callbackUrl = mostly(
  'https://example.com/h',
  fc.oneof(
    fc.constantFrom('https://example.com/h', 'http://127.0.0.1/h', 'ftp://x/y', 'https://u:p@example.com/'),
    fc.webUrl(),
    hostileText,
  ),
);
const eventType = mostly(
  'call.completed',
  fc.oneof(fc.constantFrom('message.received', 'nope'), hostileText),
);
const structuredBody = fc.record(
  {
    callback_url: callbackUrl,
    webhook_id: fc.oneof(hostileText, fc.constant(null)),
    account_id: fc.oneof(fc.constant('owner'), hostileText),
    status: fc.oneof(fc.constantFrom('active', 'disabled'), hostileText),
    type: eventType,
    data: fc.oneof(fc.dictionary(hostileText, hostileValue, { maxKeys: 4 }), hostileValue),
    occurred_at: fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      hostileText,
    ),
    idempotency_key: hostileText,
    extra: hostileValue,
  },
  { requiredKeys: [] },
);
/** The fields an operation takes, each mostly valid: what gets past validation to the handler. */
const createFields = { callback_url: callbackUrl, webhook_id: mostly('crm', hostileText) };
const fieldsOf: Record<string, Record<string, fc.Arbitrary<unknown>>> = {
  '/api/webhooks': createFields,
  '/api/webhooks/calls': createFields,
  '/api/webhooks/messages': createFields,
  '/api/webhooks/{id}': {
    callback_url: callbackUrl,
    webhook_id: mostly<string | null>(null, hostileText),
    status: mostly('active', fc.oneof(fc.constant('disabled'), hostileText)),
  },
  '/api/events': {
    type: eventType,
    data: mostly<unknown>({ n: 1 }, fc.oneof(fc.dictionary(hostileText, hostileValue), hostileValue)),
    idempotency_key: mostly('key', hostileText),
  },
};
const body = (template: string) =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .record(fieldsOf[template] ?? {}, { requiredKeys: [] })
        .map((value) => JSON.stringify(value)),
    },
    { weight: 2, arbitrary: structuredBody.map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
    { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
const queryString = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom('page', 'page_size', 'status', 'type'), fc.string({ maxLength: 5 })),
      fc.oneof(
        fc.constantFrom('1', '0', '2', '100', '101', '1e300', '1000001', 'all', 'calls', 'failed'),
        hostileText,
      ),
    ),
    { maxLength: 3 },
  )
  .map((pairs) =>
    pairs.length === 0
      ? ''
      : `?${pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&')}`,
  );

const mint = createTokenMinter({ secret: testJwtSecret });
const now = () => Math.floor(Date.now() / 1000);
/** `[Authorization header or undefined, whether it carries a valid token]`. */
const credential = fc.oneof(
  { weight: 1, arbitrary: fc.constant([undefined, false] as const) },
  fc.constantFrom(
    ['Bearer ', false] as const,
    ['Basic b3duZXI6cHc=', false] as const,
    [`Bearer ${createTokenMinter({ secret: 'x'.repeat(40) })('owner')}`, false] as const,
  ),
  fc.constant(null).map(() => [`Bearer ${mint('owner', { exp: undefined })}`, false] as const),
  fc.constant(null).map(() => [`Bearer ${mint('owner', { exp: now() - 120 })}`, false] as const),
  fc.constant(null).map(() => [`Bearer ${mint(' ')}`, false] as const),
  // Header values are what HTTP can carry: visible ASCII (RFC 9110 section 5.5).
  fc
    .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)) })
    .map((text) => [`Bearer ${text}`, false] as const),
  {
    weight: 8,
    arbitrary: fc.constantFrom('owner', 'other').map((account) => [`Bearer ${mint(account)}`, true] as const),
  },
);

/** A path for `template` with its parameters, spelled in one of the ways a client may send it. */
const target = (template: string) =>
  fc
    .record({
      id: fc.oneof(
        { weight: 4, arbitrary: fc.constant('OWN') },
        fc.uuid(),
        fc.oneof(hostileText.map(percentEncode), fc.constantFrom('%ED%A0%80', '%00', '%2e%2e', '..')),
      ),
      delivery: fc.oneof(
        { weight: 3, arbitrary: fc.constant('OWN') },
        fc.uuid(),
        fc.oneof(hostileText.map(percentEncode), fc.constantFrom('%ED%A0%80', '%00', '%2e%2e', '..')),
      ),
      encode: fc.array(fc.nat(), { maxLength: 3 }),
      upper: mostly<number[]>([], fc.array(fc.nat(), { minLength: 1, maxLength: 2 })),
      prefix: mostly('', fc.constantFrom('/.', '/x/..', '/')),
      absolute: mostly('', fc.constantFrom('http://x', 'http://127.0.0.1:1')),
      trailing: fc.boolean(),
    })
    .map((spec) => {
      let path = template
        .replace('{id}', spec.id === 'OWN' ? ownSubscription : spec.id)
        .replace('{delivery}', spec.delivery === 'OWN' ? ownDelivery : spec.delivery);
      const chars = [...path];
      for (const index of spec.encode) {
        const at = index % chars.length;
        const char = chars[at] ?? '';
        if (/[a-z0-9]/i.test(char)) chars[at] = `%${char.charCodeAt(0).toString(16)}`;
      }
      for (const index of spec.upper) {
        const at = index % chars.length;
        chars[at] = (chars[at] ?? '').toUpperCase();
      }
      path = `${spec.prefix}${chars.join('')}${spec.trailing ? '/' : ''}`;
      return `${spec.absolute}${path}`;
    });

const contentType = mostly<string | undefined>(
  'application/json',
  fc.constantFrom(
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    undefined,
  ),
);

describe('the front door under generated requests', () => {
  it.each(operations)(
    '%s %s: no 5xx, no 2xx without a valid token, 4xx changes nothing',
    async (method, template) => {
      await fc.assert(
        fc.asyncProperty(
          target(template),
          queryString,
          body(template),
          credential,
          contentType,
          async (path, query, payload, [authorization, valid], type) => {
            const headers: Record<string, string> = {};
            if (authorization !== undefined) headers.authorization = authorization;
            if (type !== undefined && payload !== undefined) headers['content-type'] = type;
            const before = await footprint();
            const response = await rawRequest(port, method, `${path}${query}`, headers, payload);
            const where = `${method} ${path}${query} -> ${response.status} ${response.body.slice(0, 300)}`;
            if (response.status >= 500) throw new Error(`5xx: ${where}`);
            if (!valid && response.status < 300) throw new Error(`2xx without a valid token: ${where}`);
            if (response.status >= 400 && (await footprint()) !== before) {
              throw new Error(`a 4xx changed rows or queues: ${where}`);
            }
          },
        ),
        { seed, numRuns, endOnFailure: false },
      );
    },
    300_000,
  );
});
