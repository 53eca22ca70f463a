-- Customer-owned credentials of an AWS destination (a role to assume with its external id, or access
-- keys), as one JSON object sealed like the signing secrets (SECRETS_ENCRYPTION_KEY, bound to the
-- subscription's id); NULL for the deployment's own identity or a destination that is not AWS.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS destination_credentials text;
