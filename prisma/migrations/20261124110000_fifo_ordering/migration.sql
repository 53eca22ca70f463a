-- Ordered delivery per subscription: a `fifo` subscription receives its events one at a time, in
-- the order they were accepted (their UUIDv7 ids), each waiting for the one before it to succeed
-- or be given up. The index finds a subscription's head: its oldest pending delivery.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS ordering text NOT NULL DEFAULT 'none';
DO $$ BEGIN
  ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_ordering_check CHECK (ordering IN ('none', 'fifo'));
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
CREATE INDEX IF NOT EXISTS deliveries_pending_in_order ON deliveries (subscription_id, event_id) WHERE status = 'pending';
