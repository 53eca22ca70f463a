/**
 * A PostgreSQL server of a test's own, on free ports in temporary folders, for tests that
 * stop, kill or restart a server: the machine's shared servers are never touched. PostgreSQL runs
 * as the `postgres` user when the tests run as root (initdb refuses root), as ../shared/README.md
 * describes.
 */
import { execFileSync } from 'node:child_process';
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
  stop(): void;
  start(): void;
  /** Stops it for good and removes its folder. */
  destroy(): void;
}

function runAsPostgres(command: string, args: string[]): void {
  if (asRoot) {
    const quoted = [command, ...args].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
    execFileSync('su', ['postgres', '-s', '/bin/bash', '-c', quoted], { stdio: 'pipe' });
  } else {
    execFileSync(command, args, { stdio: 'pipe' });
  }
}

/** initdb into a temporary folder and start the server on a free port (about a second). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-pg-'));
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  const port = await freePort();
  runAsPostgres(`${pgBin}/initdb`, ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const pgCtl = (...args: string[]) => runAsPostgres(`${pgBin}/pg_ctl`, ['-D', dir, ...args]);
  const start = () =>
    pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', `${dir}/log`, 'start', '-w');
  start();
  const urlOf = (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url: urlOf('postgres'),
    urlOf,
    start,
    stop: () => pgCtl('-m', 'fast', 'stop', '-w'),
    destroy() {
      try {
        pgCtl('-m', 'immediate', 'stop', '-w');
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
