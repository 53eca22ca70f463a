/**
 * `pnpm audit:prod`: the production dependencies, as installed from the lockfile, against the npm
 * registry's advisories (the bulk endpoint, scripts/lib/advisories.ts). Exit code 1, with one line
 * per advisory, when any is high or critical. When the registry refuses the request or cannot be
 * reached (the CI machines of this project reach a mirror that answers POST with 405), it prints
 * one line saying so and exits 0: run it on a networked machine before a release
 * (docs/security.md, "Dependencies").
 */
import { execFileSync } from 'node:child_process';
import {
  blockingAdvisories,
  installedVersions,
  type Advisory,
  type ListedPackage,
} from './lib/advisories.js';

const registry = (process.env.npm_config_registry ?? 'https://registry.npmjs.org/').replace(/\/?$/, '/');
const endpoint = `${registry}-/npm/v1/security/advisories/bulk`;

const listed = execFileSync(
  'npx',
  ['--yes', 'pnpm@10.34.9', 'list', '--prod', '--json', '--depth', 'Infinity', '-r'],
  {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  },
);
const versions = installedVersions(JSON.parse(listed) as ListedPackage[]);

let answer: Response;
try {
  answer = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(versions),
    signal: AbortSignal.timeout(30_000),
  });
} catch (error) {
  console.log(
    `dependency audit not run: ${endpoint} could not be reached (${String((error as Error).cause ?? error)})`,
  );
  process.exit(0);
}
if (!answer.ok) {
  console.log(`dependency audit not run: the registry answered ${answer.status} to POST ${endpoint}`);
  process.exit(0);
}
const blocking = blockingAdvisories((await answer.json()) as Record<string, Advisory[]>);
const packages = Object.keys(versions).length;
if (blocking.length === 0) {
  console.log(`dependency audit: no high or critical advisory in ${packages} production packages`);
} else {
  console.log(`dependency audit: ${blocking.length} high or critical advisories in production dependencies`);
  for (const line of blocking) console.log(`  ${line}`);
  process.exitCode = 1;
}
