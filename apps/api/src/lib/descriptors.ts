/**
 * The API under more connections than its process has file descriptors: it bounds the sockets it
 * holds (`server.maxConnections`, from the descriptor limit), so that the descriptors a request
 * needs (PostgreSQL, Redis, `/proc` reads) are still there; and a call that runs out of them
 * anyway (`EMFILE`, `ENFILE`) is an overload to ride out, not an error that ends the process.
 */
import { readFileSync } from 'node:fs';

/** Share of the descriptor limit that client connections may hold. */
const connectionShare = 0.75;

/** Fewest connections the bound allows, whatever the limit. */
const minConnections = 64;

/**
 * The soft limit on open files of this process (`ulimit -n`), read from `/proc/self/limits`
 * (`Max open files  <soft>  <hard>  files`), or null where that cannot be read (not Linux) or
 * says `unlimited`.
 *
 * @param text the file's text (tests); read from `/proc/self/limits` when omitted
 */
export function descriptorLimit(text?: string): number | null {
  let limits = text;
  if (limits === undefined) {
    try {
      limits = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return null;
    }
  }
  const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1];
  return soft === undefined ? null : Number(soft);
}

/**
 * How many client connections the API holds at most: API_MAX_CONNECTIONS when set (not 0), else
 * three quarters of the descriptor limit (at least {@link minConnections}), else null (no bound).
 */
export function connectionBound(configured: number, limit: number | null): number | null {
  if (configured > 0) return configured;
  if (limit === null) return null;
  return Math.max(minConnections, Math.floor(limit * connectionShare));
}

/** Whether `error` is the process (`EMFILE`) or the system (`ENFILE`) out of file descriptors. */
export function outOfDescriptors(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
}
