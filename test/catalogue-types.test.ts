/**
 * Typed publishing: `pnpm catalogue:types` generates the `data` types of a catalogue, and a
 * publisher given them refuses, at compile time, a type outside the catalogue and `data` of the
 * wrong shape. The generated file and two calls are compiled with TypeScript itself.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { loadCatalogue } from '@webhooks/shared';
import { catalogueTypes, dataTypeName } from '../scripts/catalogue-types.js';

const root = fileURLToPath(new URL('..', import.meta.url));
// Inside the repository, so that the compiled calls resolve @webhooks/shared as a service would.
const dir = mkdtempSync(join(root, 'test-output-typed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The compiler's errors for `calls`, a module publishing with the generated types. */
function compileErrors(name: string, calls: string): string[] {
  const file = join(dir, `${name}.ts`);
  writeFileSync(
    file,
    [
      "import { createEventPublisher, loadCatalogue } from '@webhooks/shared';",
      "import type { CatalogueEvents } from './catalogue-events.js';",
      'const publisher = createEventPublisher<CatalogueEvents>({',
      "  redis: 'redis://127.0.0.1:1',",
      "  catalogue: loadCatalogue('test/fixtures/billing-catalogue.yaml'),",
      '});',
      calls,
    ].join('\n'),
  );
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file?.fileName === file)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('pnpm catalogue:types', () => {
  it('names each type’s data after it', () => {
    expect(dataTypeName('invoice.paid')).toBe('InvoicePaidData');
    expect(dataTypeName('call.no_answer')).toBe('CallNoAnswerData');
  });

  it('types publish per event type: a wrong call does not compile, a right one does', async () => {
    writeFileSync(
      join(dir, 'catalogue-events.ts'),
      await catalogueTypes(loadCatalogue('test/fixtures/billing-catalogue.yaml')),
    );
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }');
    expect(
      compileErrors(
        'right',
        [
          "await publisher.publish({ accountId: 'a', type: 'invoice.paid', data: { invoice_id: 'in_1', amount_cents: 5 } });",
          "await publisher.publish({ accountId: 'a', type: 'invoice.voided', data: { anything: true } });",
        ].join('\n'),
      ),
    ).toEqual([]);
    const wrongShape = compileErrors(
      'wrong-shape',
      "await publisher.publish({ accountId: 'a', type: 'invoice.paid', data: { invoice_id: 42 } });",
    );
    expect(wrongShape.join('\n')).toMatch(/'number' is not assignable to type 'string'|amount_cents/);
    const wrongType = compileErrors(
      'wrong-type',
      "await publisher.publish({ accountId: 'a', type: 'invoice.payed', data: {} });",
    );
    expect(wrongType.join('\n')).toMatch(/invoice\.payed/);
  });
});
