-- UUIDv7 (RFC 9562 section 5.7) generated in the database, for rows the worker inserts in bulk
-- from SQL (deliveries at fan-out). PostgreSQL 15 has no uuidv7(); this overlays the millisecond
-- unix timestamp on the first 48 bits of a random v4 UUID and turns the version bits from 4 to 7.
CREATE FUNCTION uuid_generate_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
  SELECT encode(
    set_bit(
      set_bit(
        overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                FROM 1 FOR 6),
        52, 1),
      53, 1),
    'hex')::uuid
$$;
