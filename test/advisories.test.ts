import { describe, expect, it } from '@jest/globals';
import {
  blockingAdvisories,
  installedVersions,
  type Advisory,
  type ListedPackage,
} from '../scripts/lib/advisories.js';

describe("the dependency audit's rules", () => {
  it('asks about every installed version of every registry package once, leaving the workspace out', () => {
    const tree: ListedPackage[] = [
      {
        name: '@webhooks/api',
        dependencies: {
          fastify: { version: '5.1.0', dependencies: { 'fast-json': { version: '1.0.0' } } },
          '@webhooks/shared': {
            version: 'link:../../packages/shared',
            dependencies: { 'fast-json': { version: '2.0.0' } },
          },
        },
      },
      {
        name: '@webhooks/worker',
        dependencies: { fastify: { version: '5.1.0' }, bullmq: { version: '6.7.0' } },
      },
    ];
    expect(installedVersions(tree)).toEqual({
      bullmq: ['6.7.0'],
      'fast-json': ['1.0.0', '2.0.0'],
      fastify: ['5.1.0'],
    });
  });

  it('fails on high and critical advisories only', () => {
    const advisory = (severity: Advisory['severity'], id: number): Advisory => ({
      id,
      url: `https://github.com/advisories/GHSA-${id}`,
      title: `issue ${id}`,
      severity,
      vulnerable_versions: '<2.0.0',
    });
    expect(
      blockingAdvisories({
        a: [advisory('low', 1), advisory('moderate', 2)],
        b: [advisory('high', 3)],
        c: [advisory('critical', 4)],
      }),
    ).toEqual([
      'b <2.0.0: high, issue 3 (https://github.com/advisories/GHSA-3)',
      'c <2.0.0: critical, issue 4 (https://github.com/advisories/GHSA-4)',
    ]);
    expect(blockingAdvisories({ a: [advisory('moderate', 2)] })).toEqual([]);
  });
});
