import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import {
  CatalogueError,
  exampleCatalogueFile,
  loadCatalogue,
  maxSchemaDepth,
} from '../src/catalogue-file.js';
import { checkEventInput, EventInputError } from '../src/event-input.js';

const dir = mkdtempSync(join(tmpdir(), 'catalogue-'));
let files = 0;
/** Writes `text` to a new catalogue file and loads it. */
const load = (text: string) => {
  const file = join(dir, `catalogue-${files++}.yaml`);
  writeFileSync(file, text);
  return loadCatalogue(file);
};
/** The CatalogueError loading `text` throws. */
const refusal = (text: string): CatalogueError => {
  try {
    load(text);
  } catch (error) {
    if (error instanceof CatalogueError) return error;
    throw error;
  }
  throw new Error('the catalogue was accepted');
};
const oneType = (typeYaml: string) =>
  `kinds:\n  invoices:\n    description: Invoices.\n    types:\n      invoice.paid:\n${typeYaml}`;

describe('the catalogue file', () => {
  it('loads the example catalogue, with the operational kind of the service appended', () => {
    const catalogue = loadCatalogue(exampleCatalogueFile);
    expect(catalogue.kinds.map((k) => k.kind)).toEqual(['calls', 'messages', 'operational']);
    expect(catalogue.typesOfKind('calls')).toEqual(['call.started', 'call.completed', 'call.failed']);
    expect(catalogue.isOperationalType('subscription.disabled')).toBe(true);
    // Its schemas describe and constrain nothing: what was accepted before still is.
    expect(catalogue.checkData('call.completed', { duration_seconds: 'long', extra: [1] })).toEqual([]);
  });

  it('reads JSON too', () => {
    const catalogue = load(
      JSON.stringify({
        kinds: { shop: { description: 'Shop.', types: { 'order.placed': { description: 'x' } } } },
      }),
    );
    expect(catalogue.types).toEqual([
      'order.placed',
      'subscription.disabled',
      'subscription.failing',
      'subscription.recovered',
    ]);
  });

  it.each([
    ['not YAML', 'kinds: [a\n', '/', /not valid YAML/],
    ['no kinds', 'other: 1\n', '/kinds', /required/],
    ['a kind without description', 'kinds:\n  a:\n    types: {}\n', '/kinds/a/description', /required/],
    [
      'the operational kind',
      `kinds:\n  operational:\n    description: x\n    types:\n      a.b: { description: x }\n`,
      '/kinds/operational',
      /service's own/,
    ],
    [
      'a bad kind name',
      `kinds:\n  Bad Kind:\n    description: x\n    types:\n      a.b: { description: x }\n`,
      '/kinds/Bad Kind',
      /lowercase/,
    ],
    [
      'a type without an action',
      oneType('        description: x\n').replace('invoice.paid', 'invoice'),
      '/kinds/invoices/types/invoice',
      /<resource>.<action>/,
    ],
    [
      'an operational type',
      oneType('        description: x\n').replace('invoice.paid', 'subscription.disabled'),
      '/kinds/invoices/types/subscription.disabled',
      /operational/,
    ],
    [
      'an unknown field',
      oneType('        description: x\n        required: true\n'),
      '/kinds/invoices/types/invoice.paid/required',
      /not a known field/,
    ],
    [
      'a schema of an unknown keyword',
      oneType('        description: x\n        schema: { type: object, requires: [a] }\n'),
      '/kinds/invoices/types/invoice.paid/schema',
      /unknown keyword/,
    ],
    [
      'an unresolvable $ref',
      oneType("        description: x\n        schema: { $ref: 'https://evil.example/schema.json' }\n"),
      '/kinds/invoices/types/invoice.paid/schema',
      /JSON Schema/,
    ],
    [
      'an example its schema refuses',
      oneType(
        '        description: x\n        schema: { type: object, required: [id] }\n        example: { other: 1 }\n',
      ),
      '/kinds/invoices/types/invoice.paid/example',
      /does not match/,
    ],
    [
      'a pattern with a backreference, which no linear-time engine matches',
      oneType("        description: x\n        schema: { properties: { a: { pattern: '(a+)\\1' } } }\n"),
      '/kinds/invoices/types/invoice.paid/schema/properties/a/pattern',
      /linear time/,
    ],
    [
      'a lookahead',
      oneType("        description: x\n        schema: { patternProperties: { '^(?=a)': {} } }\n"),
      '/kinds/invoices/types/invoice.paid/schema/patternProperties',
      /linear time/,
    ],
    [
      'uniqueItems over objects without a bound',
      oneType(
        '        description: x\n        schema: { properties: { list: { type: array, uniqueItems: true, items: { type: object } } } }\n',
      ),
      '/kinds/invoices/types/invoice.paid/schema/properties/list',
      /maxItems of at most 100/,
    ],
    [
      'uniqueItems over untyped items at the root',
      oneType('        description: x\n        schema: { uniqueItems: true, maxItems: 101 }\n'),
      '/kinds/invoices/types/invoice.paid/schema',
      /maxItems of at most 100/,
    ],
    [
      'a long pattern',
      oneType(
        `        description: x\n        schema: { patternProperties: { '${'a'.repeat(300)}': {} } }\n`,
      ),
      '/kinds/invoices/types/invoice.paid/schema/patternProperties',
      /longer than/,
    ],
  ])('refuses %s, naming the file and the place', (_, text, pointer, reason) => {
    const error = refusal(text);
    expect(error.pointer || '/').toBe(pointer);
    expect(error.reason).toMatch(reason);
    expect(error.message).toContain(error.file);
  });

  it('matches patterns in linear time: nested and repeated quantifiers answer at once on hostile data', () => {
    const catalogue = load(
      oneType(
        "        description: x\n        schema: { properties: { a: { pattern: '^(a+)+$' }, b: { pattern: '^\\d*\\d*\\d*x$' } } }\n",
      ),
    );
    // A backtracking engine takes about 2^40 steps on the first and 50,000^3 on the second.
    const hostile = { a: `${'a'.repeat(40)}!`, b: '1'.repeat(50_000) };
    expect(catalogue.checkData('invoice.paid', hostile).map((e) => e.pointer)).toEqual([
      '/data/a',
      '/data/b',
    ]);
    expect(catalogue.checkData('invoice.paid', { a: 'aaa', b: '12x' })).toEqual([]);
  });

  it('accepts uniqueItems where Ajv checks it in linear time or over a bounded array', () => {
    const catalogue = load(
      oneType(
        '        description: x\n        schema: { properties: { tags: { type: array, uniqueItems: true, items: { type: [string, integer] } }, pairs: { type: array, uniqueItems: true, maxItems: 100 } } }\n',
      ),
    );
    expect(catalogue.checkData('invoice.paid', { tags: ['a', 'a'] }).map((e) => e.pointer)).toEqual([
      '/data/tags',
    ]);
    expect(catalogue.checkData('invoice.paid', { pairs: [{ x: 1 }, { x: 2 }] })).toEqual([]);
  });

  it('refuses a %YAML 1.1 directive, and reads a merge key as the plain key YAML 1.2 has', () => {
    const base = oneType('        description: x\n');
    expect(refusal(`%YAML 1.1\n---\n${base}`).reason).toMatch(/%YAML directive/);
    // Without the directive `<<` is an ordinary key, which a type's shape refuses; YAML 1.1 would
    // have merged the first type's fields into the second.
    const merged = `kinds:\n  invoices:\n    description: x\n    types:\n      invoice.paid: &d { description: x }\n      invoice.sent:\n        <<: *d\n`;
    expect(refusal(merged).pointer).toMatch(/^\/kinds\/invoices\/types\/invoice\.sent\b/);
  });

  it('refuses a type declared twice and a schema nested too deep', () => {
    const twice = `kinds:\n  a:\n    description: x\n    types:\n      x.y: { description: x }\n  b:\n    description: x\n    types:\n      x.y: { description: x }\n`;
    expect(refusal(twice).reason).toMatch(/declared in kind a too/);
    let schema = '{}';
    for (let i = 0; i <= maxSchemaDepth; i++) schema = `{ items: ${schema} }`;
    expect(refusal(oneType(`        description: x\n        schema: ${schema}\n`)).reason).toMatch(
      /deeper than/,
    );
  });

  it('checks published data against the schema, naming each failing pointer', () => {
    const catalogue = loadCatalogue('test/fixtures/billing-catalogue.yaml');
    const input = {
      accountId: 'acct',
      type: 'invoice.paid',
      data: { invoice_id: 'INV', currency: 'gbp', x: 1 },
    };
    let error: EventInputError | undefined;
    try {
      checkEventInput(input, catalogue);
    } catch (caught) {
      error = caught as EventInputError;
    }
    expect(error).toBeInstanceOf(EventInputError);
    expect(error!.status).toBe(400);
    expect(error!.errors.map((e) => e.pointer).sort()).toEqual(
      ['/data/amount_cents', '/data/currency', '/data/invoice_id', '/data/x'].sort(),
    );
    // A type without a schema takes any object.
    expect(() => checkEventInput({ ...input, type: 'invoice.voided' }, catalogue)).not.toThrow();
    expect(catalogue.entry('invoice.sent')?.deprecated).toBe(true);
  });
});
