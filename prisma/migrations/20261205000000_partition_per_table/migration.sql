-- One log table's partition of a day, created in a statement (and so a transaction) of its own.
-- create_log_partitions creates the three in one transaction: it held one parent's ACCESS
-- EXCLUSIVE lock while it waited for the next, and the statement that records attempts, which
-- locks deliveries, delivery_attempts and events in another order, deadlocked with it (PostgreSQL
-- manual, "Explicit Locking", Deadlocks). Returns whether it created the partition; lock_timeout_ms
-- as create_log_partitions'.
CREATE FUNCTION create_log_partition(log_table text, day date, lock_timeout_ms integer DEFAULT 0) RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
  IF log_table NOT IN ('events', 'deliveries', 'delivery_attempts') THEN
    RAISE EXCEPTION 'not a delivery log table: %', log_table USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF to_regclass(log_table || '_p' || to_char(day, 'YYYYMMDD')) IS NOT NULL THEN
    RETURN false;
  END IF;
  IF lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  END IF;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
    log_table || '_p' || to_char(day, 'YYYYMMDD'), log_table,
    log_partition_bound(day), log_partition_bound(day + 1));
  RETURN true;
END
$$;
