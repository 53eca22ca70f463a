-- Custom headers per subscription: sent with every delivery to its callback (an API key for the
-- gateway in front of it, say). Stored as one JSON object sealed like the signing secrets
-- (SECRETS_ENCRYPTION_KEY, bound to the subscription's id); NULL for none.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS headers text;
