-- How the service authenticates to a subscription's receiver (HTTP Basic, or OAuth 2.0 client
-- credentials), as one JSON object sealed like the signing secrets (SECRETS_ENCRYPTION_KEY, bound
-- to the subscription's id); NULL for the signature alone.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS auth text;
