import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { apiEnvSchema } from '@webhooks/api';
import { workerEnvSchema } from '@webhooks/worker';
import { exampleCatalogueFile, loadCatalogue } from '@webhooks/shared';
import { tableFiles, withBenchTable } from '../scripts/bench-tables.js';
import { configTableFile, withConfigTable } from '../scripts/config-table.js';

const root = new URL('../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

/** Every Markdown file a newcomer reads: the README and docs/. */
const documents = [
  'README.md',
  ...readdirSync(new URL('docs/', root))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The GitHub anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .trim()
    .replace(/\s/g, '-');

describe('README and docs/', () => {
  it(`has the configuration table generated from the config schemas in ${configTableFile} (pnpm docs:config)`, () => {
    const text = read(configTableFile);
    expect(text).toBe(withConfigTable(text));
  });

  it('declares an event type in the README that the catalogue loader accepts, with its schema', () => {
    const appended = /cat >> catalogues\/mine.yaml <<'YAML'\n([\s\S]*?)\nYAML/.exec(read('README.md'))?.[1];
    expect(appended).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'readme-catalogue-'));
    writeFileSync(join(dir, 'mine.yaml'), `${read(exampleCatalogueFile)}${appended}\n`);
    const catalogue = loadCatalogue(join(dir, 'mine.yaml'));
    expect(catalogue.typesOfKind('invoices')).toEqual(['invoice.paid']);
    expect(catalogue.checkData('invoice.paid', {})).toEqual([
      { pointer: '/data/invoice_id', detail: expect.any(String) },
    ]);
  });

  it('keeps the README short enough for a newcomer (about 250 lines at most)', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it.each(documents)('%s links only to files and headings that exist', (file) => {
    const text = read(file);
    const base = new URL(file, root);
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, anchor] = target!.split('#');
      const linked = path === '' ? base : new URL(path!, base);
      if (!existsSync(linked)) {
        broken.push(target!);
        continue;
      }
      if (anchor !== undefined && linked.pathname.endsWith('.md')) {
        const headings = [...readFileSync(linked, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
          anchorOf(m[1]!),
        );
        if (!headings.includes(anchor)) broken.push(target!);
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(tableFiles)(
    '%s has the benchmark table of the newest full run committed (pnpm docs:bench)',
    (file) => {
      const text = read(file);
      expect(text).toBe(withBenchTable(text, file, new URL('bench/results/', root).pathname));
    },
  );

  it('names the test command that .ci/run calls', () => {
    const testCommand = /npx --yes pnpm@[\d.]+ test/.exec(read('.ci/run'))?.[0];
    expect(testCommand).toBeDefined();
    expect(read('README.md')).toContain(testCommand);
  });
});

describe('docker/', () => {
  const compose = parse(read('docker/compose.yaml'), { merge: true });

  it('compose.yaml names postgres, redis, migrate, api, a fan-out worker, scalable delivery workers and an optional Prometheus', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'fanout',
      'migrate',
      'postgres',
      'prometheus',
      'redis',
      'worker',
    ]);
    expect(compose.services.fanout.environment.WORKER_QUEUES).toBe('events');
    expect(compose.services.worker.environment.WORKER_QUEUES).toBe('deliveries');
    expect(compose.services.worker.deploy.replicas).toBeGreaterThan(1);
    expect(compose.services.prometheus.profiles).toEqual(['metrics']);
    const scrape = parse(read('docker/prometheus.yml'));
    expect(scrape.scrape_configs.map((job: { job_name: string }) => job.job_name).sort()).toEqual([
      'api',
      'fanout',
      'worker',
    ]);
    expect(compose.services.redis.command.join(' ')).toMatch(
      /--appendonly yes.*--maxmemory-policy noeviction/,
    );
  });

  it("compose.yaml sets only variables the services' config schemas know", () => {
    const known = {
      api: apiEnvSchema.properties,
      worker: workerEnvSchema.properties,
      fanout: workerEnvSchema.properties,
      migrate: apiEnvSchema.properties,
    };
    for (const [service, properties] of Object.entries(known)) {
      const names = Object.keys(compose.services[service].environment);
      expect(names.filter((name) => !(name in properties))).toEqual([]);
    }
  });

  it.each(['docker/api.Dockerfile', 'docker/worker.Dockerfile'])(
    '%s copies only files that exist, runs as non-root under tini',
    (file) => {
      const dockerfile = read(file);
      const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) =>
        match[1]!.split(/\s+/),
      );
      expect(sources.length).toBeGreaterThan(5);
      for (const source of sources)
        expect([source, existsSync(new URL(source, root))]).toEqual([source, true]);
      const entries = [
        ...dockerfile.matchAll(/^CMD \["node", "--import", "([^"]+)", "([^"]+)"\]$/gm),
      ].flatMap((match) => [match[1]!, match[2]!]);
      expect(entries).toHaveLength(2);
      expect(dockerfile).toMatch(/^USER node$/m);
      expect(dockerfile).toMatch(/ENTRYPOINT \["\/usr\/bin\/tini", "--"\]/);
      expect(dockerfile).toMatch(/^HEALTHCHECK /m);
      expect(dockerfile).toContain('pnpm install --frozen-lockfile');
    },
  );
});
