-- The delivery log (events, deliveries, delivery_attempts) partitioned by day, so that retention
-- drops a day's partitions instead of deleting its rows, and a lookup by id reads one partition.
--
-- Each table is range-partitioned on a UUID whose first 48 bits are a unix time in ms (RFC 9562
-- section 5.7; PostgreSQL compares UUIDs bytewise, so a day is one contiguous range of ids):
-- - events on their id (UUIDv7, taken when the event was accepted);
-- - deliveries on their id, which delivery_id() derives from the event and the subscription, so a
--   delivery lives in its event's day, the (event, subscription) pair stays unique through the
--   primary key (a unique index of a partitioned table must hold the partition key), and the
--   worker finds a delivery by its id from the pair its job carries;
-- - delivery_attempts on their delivery's id, so an attempt lives in its delivery's day.
-- The primary keys stay the ids (delivery_attempts: its delivery's id and its own).
--
-- There is no foreign key between the three tables: a day of each is dropped together, and a
-- foreign key would make dropping a referenced partition scan the referencing table. Deleting a
-- delivery deletes its attempts by trigger instead (what ON DELETE CASCADE did), and deliveries
-- still cascade from their subscription.
--
-- An id outside every day created so far (an event id that is not a UUIDv7, or a day the worker
-- did not create in time) lands in the table's default partition; retention deletes such rows one
-- batch at a time, as before.

-- UUIDv8 (RFC 9562 section 5.8) of a delivery: its event id's 48-bit timestamp, then 74 bits of
-- SHA-256 over both ids. Two distinct pairs share an id only if both the millisecond and 74 hash
-- bits agree, about 10^-15 for ten thousand deliveries in one millisecond.
CREATE FUNCTION delivery_id(event_id uuid, subscription_id uuid) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT encode(
    set_bit(set_bit(set_bit(set_bit(set_bit(set_bit(
      overlay(substring(sha256(uuid_send(event_id) || uuid_send(subscription_id)) FROM 1 FOR 16)
              PLACING substring(uuid_send(event_id) FROM 1 FOR 6) FROM 1 FOR 6),
      55, 1), 54, 0), 53, 0), 52, 0),
      71, 1), 70, 0),
    'hex')::uuid
$$;

-- The lowest UUID of a UTC day: its first millisecond, then zeros.
CREATE FUNCTION log_partition_bound(day date) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT (lpad(to_hex((extract(epoch FROM day::timestamp AT TIME ZONE 'UTC') * 1000)::bigint), 12, '0')
          || repeat('0', 20))::uuid
$$;

-- Creates the day's partition of each log table (<table>_pYYYYMMDD) where missing; true when it
-- created one. Fails with check_violation (23514) when the default partition already holds rows
-- of that day, which then stay there, and with lock_not_available (55P03) when a table's lock is
-- not granted within lock_timeout_ms (0: the session's lock_timeout).
CREATE FUNCTION create_log_partitions(day date, lock_timeout_ms integer DEFAULT 0) RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
  log_table text;
  created boolean := false;
BEGIN
  IF lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  END IF;
  FOREACH log_table IN ARRAY ARRAY['events', 'deliveries', 'delivery_attempts'] LOOP
    IF to_regclass(log_table || '_p' || to_char(day, 'YYYYMMDD')) IS NULL THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
        log_table || '_p' || to_char(day, 'YYYYMMDD'), log_table,
        log_partition_bound(day), log_partition_bound(day + 1));
      created := true;
    END IF;
  END LOOP;
  RETURN created;
END
$$;

-- The days that have a partition of the events table, oldest first.
CREATE FUNCTION log_partition_days() RETURNS SETOF date
LANGUAGE sql STABLE
AS $$
  SELECT to_date(substring(c.relname FROM '_p([0-9]{8})$'), 'YYYYMMDD') AS day
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = 'events'::regclass AND c.relname ~ '_p[0-9]{8}$'
  ORDER BY day
$$;

-- Drops the day's partition of each log table, with every row in it; lock_timeout_ms as above.
CREATE FUNCTION drop_log_partitions(day date, lock_timeout_ms integer DEFAULT 0) RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  IF lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  END IF;
  EXECUTE format('DROP TABLE IF EXISTS %I, %I, %I',
    'delivery_attempts_p' || to_char(day, 'YYYYMMDD'),
    'deliveries_p' || to_char(day, 'YYYYMMDD'),
    'events_p' || to_char(day, 'YYYYMMDD'));
END
$$;

ALTER TABLE events RENAME TO events_unpartitioned;
ALTER TABLE deliveries RENAME TO deliveries_unpartitioned;
ALTER TABLE delivery_attempts RENAME TO delivery_attempts_unpartitioned;
ALTER SEQUENCE delivery_attempts_id_seq OWNED BY NONE;
ALTER TABLE delivery_attempts_unpartitioned ALTER COLUMN id DROP DEFAULT;

CREATE TABLE events (
  id uuid NOT NULL,
  account_id varchar(255) NOT NULL,
  type varchar(128) NOT NULL,
  data jsonb NOT NULL,
  occurred_at timestamptz(3) NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT events_account_id_not_empty CHECK (account_id <> '')
) PARTITION BY RANGE (id);

CREATE TABLE deliveries (
  id uuid NOT NULL,
  event_id uuid NOT NULL,
  subscription_id uuid NOT NULL,
  status "DeliveryStatus" NOT NULL DEFAULT 'pending',
  attempts_made integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error varchar(64),
  next_attempt_at timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at timestamptz(3) NOT NULL,
  round integer NOT NULL DEFAULT 0
) PARTITION BY RANGE (id);

CREATE TABLE delivery_attempts (
  id bigint NOT NULL DEFAULT nextval('delivery_attempts_id_seq'),
  delivery_id uuid NOT NULL,
  attempt_number integer NOT NULL,
  started_at timestamptz(3) NOT NULL,
  duration_ms integer NOT NULL,
  status_code integer,
  error_class varchar(64),
  error_message varchar(1024),
  response_body text,
  in_flight_limit integer
) PARTITION BY RANGE (delivery_id);
ALTER SEQUENCE delivery_attempts_id_seq OWNED BY delivery_attempts.id;

CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT;
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts DEFAULT;

-- A day for every day of the rows kept (by when they were stored, at most 400 days back), through
-- a week ahead; the worker's maintenance keeps creating days ahead from then on.
SELECT create_log_partitions(day::date)
FROM generate_series(
  greatest(least((SELECT min(created_at) FROM events_unpartitioned), now()), now() - interval '400 days')::date,
  (now() + interval '7 days')::date,
  interval '1 day') AS day;

INSERT INTO events SELECT id, account_id, type, data, occurred_at, created_at FROM events_unpartitioned;
-- Deliveries stored before take the id every delivery has from now on, so that each lives in its
-- event's day (their ids were taken when they were created, sometimes the next day) and is found
-- by it; their attempts follow. (event_id, subscription_id) was unique, so no two collide.
INSERT INTO deliveries
SELECT delivery_id(event_id, subscription_id), event_id, subscription_id, status, attempts_made, last_status_code,
       last_error, next_attempt_at, created_at, updated_at, round
FROM deliveries_unpartitioned;
INSERT INTO delivery_attempts
SELECT a.id, delivery_id(d.event_id, d.subscription_id), a.attempt_number, a.started_at, a.duration_ms,
       a.status_code, a.error_class, a.error_message, a.response_body, a.in_flight_limit
FROM delivery_attempts_unpartitioned a JOIN deliveries_unpartitioned d ON d.id = a.delivery_id;

DROP TABLE delivery_attempts_unpartitioned, deliveries_unpartitioned, events_unpartitioned;

ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id);
CREATE INDEX events_account_id_created_at_idx ON events (account_id, created_at);

ALTER TABLE deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);
-- A subscription's deliveries, newest first by id (the list, and its pages read on from an id).
CREATE INDEX deliveries_subscription_id_id_idx ON deliveries (subscription_id, id);
CREATE INDEX deliveries_event_id_subscription_id_idx ON deliveries (event_id, subscription_id);
CREATE INDEX deliveries_pending_in_order ON deliveries (subscription_id, event_id) WHERE status = 'pending';
CREATE INDEX deliveries_pending_next_attempt_at_idx ON deliveries (next_attempt_at) WHERE status = 'pending';
ALTER TABLE deliveries ADD CONSTRAINT deliveries_subscription_id_fkey FOREIGN KEY (subscription_id)
  REFERENCES subscriptions (id) ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (delivery_id, id);

CREATE FUNCTION delete_delivery_attempts() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM delivery_attempts WHERE delivery_id = OLD.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER deliveries_delete_attempts AFTER DELETE ON deliveries
  FOR EACH ROW EXECUTE FUNCTION delete_delivery_attempts();
