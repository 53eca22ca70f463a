/**
 * A PostgreSQL server of a test's own, on free ports in temporary folders, for tests that
 * stop, kill or restart a server: the machine's shared servers are never touched. PostgreSQL runs
 * as the `postgres` user when the tests run as root (initdb refuses root), as ../shared/README.md
 * describes. Stopping and starting never block the test's process: it hosts the API and the
 * receiver, and a receiver that cannot answer while `pg_ctl` waits would fail the worker's attempts
 * with timeouts that have nothing to do with PostgreSQL.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/lib/services.js';

const pgBin = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;

/** A private PostgreSQL server: `url` of its `postgres` database, and its controls. */
export interface PrivatePostgres {
  port: number;
  url: string;
  /** URL of another database on this server. */
  urlOf(database: string): string;
  /** A fast shutdown (`pg_ctl -m fast stop -w`); resolves once it is down. */
  stop(): Promise<void>;
  /** Starts it again; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it for good and removes its folder. */
  destroy(): Promise<void>;
}

const run = promisify(execFile);

async function runAsPostgres(command: string, args: string[]): Promise<void> {
  if (asRoot) {
    const quoted = [command, ...args].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
    await run('su', ['postgres', '-s', '/bin/bash', '-c', quoted]);
  } else {
    await run(command, args);
  }
}

/** initdb into a temporary folder and start the server on a free port (about a second). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-pg-'));
  if (asRoot) await run('chown', ['postgres', dir]);
  const port = await freePort();
  await runAsPostgres(`${pgBin}/initdb`, ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const pgCtl = (...args: string[]) => runAsPostgres(`${pgBin}/pg_ctl`, ['-D', dir, ...args]);
  const start = () =>
    pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', `${dir}/log`, 'start', '-w');
  await start();
  const urlOf = (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url: urlOf('postgres'),
    urlOf,
    start,
    stop: () => pgCtl('-m', 'fast', 'stop', '-w'),
    async destroy() {
      await pgCtl('-m', 'immediate', 'stop', '-w').catch(() => {
        // Already stopped.
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
