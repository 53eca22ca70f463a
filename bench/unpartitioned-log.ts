/**
 * The delivery log without partitions, for the bench's partitioning cost: turns a freshly migrated,
 * empty database's `events`, `deliveries` and `delivery_attempts` into plain tables with the same
 * columns, defaults, keys, indexes, foreign key and delete trigger. The partition functions become
 * no-ops and each `<table>_default` a view of its table, so the worker's maintenance and retention
 * run unchanged against it.
 */
import pg from 'pg';

const conversion = `
ALTER SEQUENCE delivery_attempts_id_seq OWNED BY NONE;
CREATE TABLE events_plain (LIKE events INCLUDING ALL);
CREATE TABLE deliveries_plain (LIKE deliveries INCLUDING ALL);
CREATE TABLE delivery_attempts_plain (LIKE delivery_attempts INCLUDING ALL);
DROP TABLE delivery_attempts, deliveries, events;
ALTER TABLE events_plain RENAME TO events;
ALTER TABLE deliveries_plain RENAME TO deliveries;
ALTER TABLE delivery_attempts_plain RENAME TO delivery_attempts;
ALTER SEQUENCE delivery_attempts_id_seq OWNED BY delivery_attempts.id;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_subscription_id_fkey FOREIGN KEY (subscription_id)
  REFERENCES subscriptions (id) ON DELETE CASCADE ON UPDATE CASCADE;
CREATE TRIGGER deliveries_delete_attempts AFTER DELETE ON deliveries
  FOR EACH ROW EXECUTE FUNCTION delete_delivery_attempts();
CREATE VIEW events_default AS SELECT * FROM events;
CREATE VIEW deliveries_default AS SELECT * FROM deliveries;
CREATE VIEW delivery_attempts_default AS SELECT * FROM delivery_attempts;
CREATE OR REPLACE FUNCTION create_log_partitions(day date, lock_timeout_ms integer DEFAULT 0) RETURNS boolean
LANGUAGE sql AS $$ SELECT false $$;
CREATE OR REPLACE FUNCTION log_partition_days() RETURNS SETOF date
LANGUAGE sql STABLE AS $$ SELECT NULL::date WHERE false $$;
`;

/** Converts the log of the database at `databaseUrl` in one transaction; the log must be empty. */
export async function toUnpartitionedLog(databaseUrl: string): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(`BEGIN; ${conversion} COMMIT;`);
  } finally {
    await db.end();
  }
}
