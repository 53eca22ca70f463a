-- The reconciler looks for `subscription.disabled` notices of the last hour that were stored but
-- never fanned out: a partial index keeps that a lookup of a few rows, however many events the
-- hour holds.
CREATE INDEX IF NOT EXISTS events_subscription_disabled ON events (id) WHERE type = 'subscription.disabled';
