/**
 * More connections than file descriptors: the API bounds its sockets (`server.maxConnections`) so a
 * request's own descriptors (PostgreSQL, Redis, `/proc`) remain, and `EMFILE`/`ENFILE` is an
 * overload to ride out, never an exit.
 */
import { readFileSync } from 'node:fs';

/** Share of the descriptor limit that client connections may hold. */
const connectionShare = 0.75;

/** Fewest connections the bound allows, whatever the limit. */
const minConnections = 64;

/** The soft open-files limit from `text` (default `/proc/self/limits`); null where unreadable or `unlimited`. */
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
 * The API's connection bound: API_MAX_CONNECTIONS (not 0), else ¾ of the descriptor limit (at least
 * {@link minConnections}), else null (no bound).
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
