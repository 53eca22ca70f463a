/**
 * CPU time of the processes of this host, read from /proc (proc(5): utime and stime, in clock
 * ticks of 100 a second), for the cost probe and the harness: a process's, and the PostgreSQL
 * backend's serving a connection.
 */
import { readFile } from 'node:fs/promises';
import type pg from 'pg';

const ticksPerMs = 100 / 1000;

/**
 * CPU ms a process of this host has used, 0 when it is gone; with `reapedChildren`, plus what its
 * children used that have exited and been waited for (proc(5): cutime and cstime).
 */
export async function processCpuMs(pid: number | undefined, reapedChildren = false): Promise<number> {
  if (pid === undefined) return 0;
  try {
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return (reapedChildren ? own + Number(fields[13]) + Number(fields[14]) : own) / ticksPerMs;
  } catch {
    return 0;
  }
}

/**
 * CPU ms the PostgreSQL backend serving `db` has used (the server runs on this host), so that
 * the bench can leave its own connections out of the service's cost.
 */
export async function connectionCpuMs(db: pg.Client): Promise<number> {
  const {
    rows: [backend],
  } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return processCpuMs(backend?.pid);
}
