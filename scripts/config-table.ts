/**
 * The configuration table of docs/configuration.md, generated from the services' environment
 * schemas so it cannot drift: `pnpm docs:config` rewrites the part of that file between the
 * config-table markers, and a test fails when it differs from what this produces.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { apiEnvSchema } from '@webhooks/api';
import { workerEnvSchema } from '@webhooks/worker';
import { replaceBetweenMarkers } from './lib/markers.js';

/** The file holding the table, relative to the repository root. */
export const configTableFile = 'docs/configuration.md';

/** Markers around the generated table in {@link configTableFile}. */
export const markers = ['<!-- config-table:start -->', '<!-- config-table:end -->'] as const;

type Property = { default?: unknown; description?: string };

/** The Markdown table: one row per variable, with the services that read it, default and meaning. */
export function configTable(): string {
  const api = apiEnvSchema.properties as Record<string, Property>;
  const worker = workerEnvSchema.properties as Record<string, Property>;
  const names = [...new Set([...Object.keys(api), ...Object.keys(worker)])];
  const rows = names.map((name) => {
    const property = api[name] ?? worker[name]!;
    const services = [name in api && 'api', name in worker && 'worker'].filter(Boolean).join(', ');
    const fallback =
      property.default === '' || property.default === undefined
        ? '(none)'
        : `\`${String(property.default)}\``;
    return `| \`${name}\` | ${services} | ${fallback} | ${property.description ?? ''} |`;
  });
  return ['| variable | read by | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** `text` of {@link configTableFile} with the table between the markers replaced by the generated one. */
export function withConfigTable(text: string): string {
  return replaceBetweenMarkers(text, markers, configTable(), configTableFile);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const path = new URL(`../../${configTableFile}`, import.meta.url);
  await writeFile(path, withConfigTable(await readFile(path, 'utf8')));
  console.log(`${configTableFile}: configuration table updated`);
}
