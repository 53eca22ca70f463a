-- The events API: an account's events listed newest first by id (UUIDv7, acceptance order), and
-- payload expunge, which empties an event's data and records when.
ALTER TABLE events ADD COLUMN payload_expunged_at timestamptz(3);
CREATE INDEX events_account_id_id_idx ON events (account_id, id);
