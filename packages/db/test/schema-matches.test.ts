import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import internals from '@prisma/internals';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';

type Column = { table_name: string; column_name: string; is_nullable: 'YES' | 'NO' };

let database: TestDatabase;
let columns: Map<string, Column>;

beforeAll(async () => {
  database = await createTestDatabase('schema');
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const { rows } = await client.query<Column>(
    "SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public'",
  );
  await client.end();
  columns = new Map(rows.map((row) => [`${row.table_name}.${row.column_name}`, row]));
});
afterAll(() => database.drop());

it('the migrated database has every model and scalar field of schema.prisma, with its nullability', async () => {
  const datamodel = await readFile(
    fileURLToPath(new URL('../../../prisma/schema.prisma', import.meta.url)),
    'utf8',
  );
  const dmmf = await internals.getDMMF({ datamodel });
  const expected = dmmf.datamodel.models.flatMap((model) =>
    model.fields
      .filter((field) => field.kind === 'scalar' || field.kind === 'enum')
      .map((field) => ({
        column: `${model.dbName ?? model.name}.${field.dbName ?? field.name}`,
        nullable: field.isRequired ? 'NO' : 'YES',
      })),
  );
  expect(expected.length).toBeGreaterThan(20);
  const actual = expected.map(({ column }) => ({
    column,
    nullable: columns.get(column)?.is_nullable ?? 'missing',
  }));
  expect(actual).toEqual(expected);
});
