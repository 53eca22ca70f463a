/** The repository's root folder, for scripts that run both from their sources and from dist. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest folder above this file holding pnpm-workspace.yaml (an absolute path). */
export function repositoryRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'pnpm-workspace.yaml'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('pnpm-workspace.yaml not found above scripts/lib');
    dir = parent;
  }
  return dir;
}
