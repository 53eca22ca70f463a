-- Subscriptions choose their event types: exact types and wildcards such as call.* or *; empty
-- (the default) receives every type of their kind, or of the catalogue for a general subscription.
-- They may also filter on the payload's content: a MongoDB-style query, checked by the API and
-- evaluated by the fan-out; null receives every event of their types.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS event_types text[] NOT NULL DEFAULT '{}';
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS filter jsonb;
