/**
 * Ajv's errors for a union tagged by `type` (a subscription's `destination`), narrowed to what the
 * client meant: Ajv reports every branch of an `anyOf` (JSON Schema 2020-12, 10.2.1.2), so a wrong
 * bucket name read as a dozen errors about other types' fields. The branch whose `type` matched is
 * kept alone; when none matched, one error names the types allowed.
 */
import type { ErrorObject } from 'ajv';

/** An Ajv error (Ajv's `ErrorObject`). */
export type AjvError = ErrorObject;

/** The branch index of `error` under the `anyOf` at `schemaPath`, or null when it is not under it. */
function branchOf(error: AjvError, schemaPath: string): number | null {
  if (!error.schemaPath.startsWith(`${schemaPath}/`)) return null;
  const index = Number.parseInt(error.schemaPath.slice(schemaPath.length + 1), 10);
  return Number.isNaN(index) ? null : index;
}

/**
 * `errors` with each tagged union's branch errors narrowed: for an `anyOf` whose branches fix `type`
 * with `const`, only the errors of the branch whose `type` the value has; a single error when it has
 * none of them (`type` is required, or one of the values listed). Other errors pass unchanged.
 */
export function narrowUnionErrors(errors: readonly AjvError[]): AjvError[] {
  let narrowed = [...errors];
  for (const union of errors.filter((e) => e.keyword === 'anyOf')) {
    const branches = new Map<number, AjvError[]>();
    for (const error of narrowed) {
      const branch = branchOf(error, union.schemaPath);
      if (branch !== null) branches.set(branch, [...(branches.get(branch) ?? []), error]);
    }
    /** The branch's error about `type`: another value than its own, or none given. */
    const tagError = (branch: AjvError[]) =>
      branch.find(
        (e) =>
          (e.keyword === 'const' && e.instancePath === `${union.instancePath}/type`) ||
          (e.keyword === 'required' &&
            e.instancePath === union.instancePath &&
            e.params.missingProperty === 'type'),
      );
    const tagged = [...branches.values()];
    if (tagged.length === 0 || tagged.every((branch) => tagError(branch) === undefined)) continue;
    const matched = tagged.filter((branch) => tagError(branch) === undefined);
    if (matched.length > 1) continue;
    const inUnion = (e: AjvError) => e === union || branchOf(e, union.schemaPath) !== null;
    const kept = narrowed.filter((e) => !inUnion(e) || (matched[0]?.includes(e) ?? false));
    if (matched.length === 1) {
      narrowed = kept;
      continue;
    }
    const missing = tagged.some((branch) => tagError(branch)!.keyword === 'required');
    const allowed = tagged.map((branch) => String(tagError(branch)!.params.allowedValue));
    narrowed = [
      ...kept,
      missing
        ? { ...union, keyword: 'required', params: { missingProperty: 'type' } }
        : {
            ...union,
            instancePath: `${union.instancePath}/type`,
            keyword: 'enum',
            message: `must be one of ${allowed.join(', ')}`,
            params: { allowedValues: allowed },
          },
    ];
  }
  return narrowed;
}
