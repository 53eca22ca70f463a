import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { runDemo } from '../scripts/demo/run.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('demo');
});
afterAll(() => database.drop());

it('the demo delivers every event of a small burst, verified, exactly once, with the retries shown', async () => {
  const summary = await runDemo({
    events: 50,
    apiEvents: 2,
    failFirst: 2,
    timeoutMs: 45_000,
    databaseUrl: database.url,
  });
  expect(summary).toMatchObject({
    ok: true,
    eventsPublished: 52,
    deliveriesExpected: 52 + 26,
    deliveriesConfirmed: 78,
    retries: 2,
    failures: 0,
    signatureFailures: 0,
    duplicates: 0,
    workerMetrics: { succeeded: 78, retry: 2 },
  });
  const log = summary.retriedDeliveryLog as { attempts: Array<{ status_code: number }> };
  expect(log.attempts.map((attempt) => attempt.status_code)).toEqual([500, 200]);
});
