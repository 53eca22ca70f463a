-- A subscription's transformation: JavaScript source run in a sandbox on each webhook before it is
-- sent (null: none).
ALTER TABLE subscriptions ADD COLUMN transformation text;
