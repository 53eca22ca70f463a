/**
 * One jest run over every workspace (one project each). Sources are TypeScript ES modules compiled
 * by SWC; jest runs them as native ESM (`node --experimental-vm-modules`, see the root `jest`
 * script), and workspace packages resolve to their sources, so tests need no build step.
 */
import { join } from 'node:path';
import type { Config } from 'jest';

const root = process.cwd();
const sources: Record<string, string> = {
  '@webhooks/publisher': 'packages/publisher/src/index.ts',
  '@webhooks/publisher/config-error': 'packages/publisher/src/config-error.ts',
  '@webhooks/shared': 'packages/shared/src/index.ts',
  '@webhooks/shared/edge-sampling-hook': 'packages/shared/src/edge-sampling-hook.ts',
  '@webhooks/shared/unsampled-work': 'packages/shared/src/unsampled-work.ts',
  '@webhooks/client': 'packages/client/src/index.ts',
  '@webhooks/db': 'packages/db/src/index.ts',
  '@webhooks/api': 'apps/api/src/index.ts',
  '@webhooks/worker': 'apps/worker/src/index.ts',
};

/**
 * ESM-only packages that CommonJS dependencies require() (light-my-request needs cookie,
 * @fastify/static content-disposition, swagger-parser json-schema-ref-parser). Node >= 20.19 loads them natively, jest's loader on
 * Node 20 cannot, so jest compiles these few to CommonJS when they are required.
 */
const requiredEsmPackages = ['cookie', 'content-disposition', '@apidevtools/json-schema-ref-parser'];
const pnpmDirs = requiredEsmPackages.map((name) => name.replace('/', '+').replace(/[.+]/g, '\\$&'));
const requiredEsm = `/node_modules/\\.pnpm/(${pnpmDirs.join('|')})@`;

const workspaces = [
  'packages/publisher',
  'packages/shared',
  'packages/client',
  'packages/cli',
  'packages/db',
  'apps/api',
  'apps/worker',
  'test',
];

const project = (dir: string): Config => ({
  displayName: dir,
  rootDir: dir,
  testMatch: ['<rootDir>/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' } }],
    [`${requiredEsm}.+\\.js$`]: [
      '@swc/jest',
      { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' } },
    ],
  },
  transformIgnorePatterns: [`^(?!.*${requiredEsm}).*/node_modules/`],
  moduleNameMapper: {
    ...Object.fromEntries(Object.entries(sources).map(([name, file]) => [`^${name}$`, join(root, file)])),
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
});

const config: Config = {
  projects: workspaces.map(project),
  // One test file per core (os.availableParallelism()). Each file has a database, a queue prefix
  // and servers of its own, so files run side by side: on two cores the suite took 9.5 minutes
  // instead of 14 one file at a time. Three at a time gained little once the CPU was the bound (a
  // clean clone on two cores: 545 s against 594 s with two, load average 7, a traced service's
  // start past its 30 s), and starved the machine before (load average 40, ten setups timed out). In
  // worker processes that are replaced once they hold more than the limit after a file: each
  // file's ESM module graph stays in memory after it (jest's vm-modules loader leaks it), and in
  // band the heap grew by 20-40 MB a file until the last files took a minute each for what takes a
  // second alone.
  maxWorkers: '100%',
  workerIdleMemoryLimit: '1GB',
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
};

export default config;
