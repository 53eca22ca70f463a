-- Client certificates (mutual TLS) per subscription: the certificate and its private key in PEM,
-- as one JSON object sealed like the signing secrets (SECRETS_ENCRYPTION_KEY, bound to the
-- subscription's id); NULL for none.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS client_tls text;
