/**
 * The worker's hot-path pool on a real PostgreSQL: its named statements run from the plan made on
 * their first run, not planned again for each run's parameters, unless the operator says not to
 * (DATABASE_GENERIC_PLANS=false, for a pooler that refuses the setting); startup options the
 * operator put in DATABASE_URL apply too.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPgPool, startupOptions, type Pool } from '../src/index.js';
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

/** `name`'s value in a session of `of`. */
async function setting(of: Pool, name: string): Promise<string> {
  const { rows } = await of.query<{ value: string }>('SELECT current_setting($1) AS value', [name]);
  return rows[0]!.value;
}

describe('startup options in DATABASE_URL', () => {
  it('apply beside the plans made once', async () => {
    const url = new URL(database.url);
    url.searchParams.set('options', '-c statement_timeout=4321');
    const withOptions = createPgPool({ databaseUrl: url.toString() });
    try {
      expect(await setting(withOptions, 'statement_timeout')).toBe('4321ms');
      expect(await plansOfThreeRuns(withOptions)).toEqual([{ generic_plans: '3', custom_plans: '0' }]);
    } finally {
      await withOptions.end();
    }
  });

  it("win over the pool's own plan setting", async () => {
    const url = new URL(database.url);
    url.searchParams.set('options', '-c plan_cache_mode=force_custom_plan');
    const operatorsChoice = createPgPool({ databaseUrl: url.toString() });
    try {
      expect(await plansOfThreeRuns(operatorsChoice)).toEqual([{ generic_plans: '0', custom_plans: '3' }]);
    } finally {
      await operatorsChoice.end();
    }
  });
});

describe('startupOptions', () => {
  const plain = 'postgresql://app:p%40ss@db.internal:5432/webhooks?sslmode=require';

  it('leaves a URL without options as it is', () => {
    expect(startupOptions(plain, true)).toEqual({
      connectionString: plain,
      options: '-c plan_cache_mode=force_generic_plan',
    });
    expect(startupOptions(plain, false)).toEqual({ connectionString: plain });
  });

  it("moves the URL's options after the pool's, and keeps the rest of the URL", () => {
    const { connectionString, options } = startupOptions(`${plain}&options=-c%20search_path%3Dapp`, true);
    expect(options).toBe('-c plan_cache_mode=force_generic_plan -c search_path=app');
    const rest = new URL(connectionString);
    expect(rest.searchParams.has('options')).toBe(false);
    expect(rest.searchParams.get('sslmode')).toBe('require');
    expect(decodeURIComponent(rest.password)).toBe('p@ss');
    expect(startupOptions(`${plain}&options=-c%20search_path%3Dapp`, false).options).toBe(
      '-c search_path=app',
    );
  });
});
