/**
 * The worker's hot-path pool on a real PostgreSQL: its named statements run from the plan made on
 * their first run, not planned again for each run's parameters, unless the operator says not to
 * (DATABASE_GENERIC_PLANS=false, for a pooler that refuses the setting).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPgPool, type Pool } from '../src/index.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';

let database: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  database = await createTestDatabase('pg-pool');
  pool = createPgPool({ databaseUrl: database.url });
});
afterAll(async () => {
  await pool.end();
  await database.drop();
});

/** How `pool` planned a named statement it ran three times: its generic and custom plans. */
async function plansOfThreeRuns(of: Pool) {
  const client = await of.connect();
  try {
    for (const id of [1, 2, 3])
      await client.query({ name: 'plan-probe', text: 'SELECT $1::int + 1 AS next', values: [id] });
    const { rows } = await client.query<{ generic_plans: string; custom_plans: string }>(
      "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'plan-probe'",
    );
    return rows;
  } finally {
    client.release();
  }
}

describe('a named statement of the pool', () => {
  it('is planned once, for any parameters, from its first run on', async () => {
    expect(await plansOfThreeRuns(pool)).toEqual([{ generic_plans: '3', custom_plans: '0' }]);
  });

  it('is planned per run, as the server decides, when generic plans are turned off', async () => {
    const serverDefault = createPgPool({ databaseUrl: database.url, genericPlans: false });
    try {
      expect(await plansOfThreeRuns(serverDefault)).toEqual([{ generic_plans: '0', custom_plans: '3' }]);
    } finally {
      await serverDefault.end();
    }
  });
});
