/**
 * The pure rules of the dependency audit (`scripts/audit.ts`): which installed versions to ask
 * about, and which advisories stop a release. The npm registry's bulk advisory endpoint
 * (`POST /-/npm/v1/security/advisories/bulk`, the one `npm audit` uses since npm 7) takes
 * `{ "<package>": ["<version>", …] }` and answers `{ "<package>": [advisory, …] }` with the
 * advisories that affect any of those versions.
 */

/** A node of `pnpm list --json --depth Infinity`: a package and what it depends on. */
export interface ListedPackage {
  name?: string;
  version?: string;
  dependencies?: Record<string, ListedPackage>;
}

/** One advisory of the bulk endpoint's answer. */
export interface Advisory {
  id: number;
  url: string;
  title: string;
  severity: 'info' | 'low' | 'moderate' | 'high' | 'critical';
  vulnerable_versions: string;
}

/** Severities that fail the audit. */
export const blockingSeverities: ReadonlySet<Advisory['severity']> = new Set(['high', 'critical']);

/**
 * The bulk endpoint's request for the installed tree(s) of `pnpm list --prod --json --depth
 * Infinity -r`: every package with each version installed, sorted. The workspace's own packages
 * (linked, their version `0.1.0` or `link:`) are left out, as the registry does not hold them.
 */
export function installedVersions(roots: readonly ListedPackage[]): Record<string, string[]> {
  const found = new Map<string, Set<string>>();
  const visit = (deps: Record<string, ListedPackage> | undefined) => {
    for (const [name, node] of Object.entries(deps ?? {})) {
      const { version } = node;
      if (version === undefined || version.startsWith('link:') || name.startsWith('@webhooks/')) {
        visit(node.dependencies);
        continue;
      }
      const versions = found.get(name) ?? new Set<string>();
      if (versions.has(version)) continue;
      found.set(name, versions.add(version));
      visit(node.dependencies);
    }
  };
  for (const root of roots) visit(root.dependencies);
  return Object.fromEntries(
    [...found].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => [name, [...versions].sort()]),
  );
}

/** The advisories of `answer` that fail the audit (high or critical), as `<package>: <title> (<url>)` lines. */
export function blockingAdvisories(answer: Record<string, Advisory[]>): string[] {
  return Object.entries(answer).flatMap(([name, advisories]) =>
    advisories
      .filter((advisory) => blockingSeverities.has(advisory.severity))
      .map(
        (advisory) =>
          `${name} ${advisory.vulnerable_versions}: ${advisory.severity}, ${advisory.title} (${advisory.url})`,
      ),
  );
}
