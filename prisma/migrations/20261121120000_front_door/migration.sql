-- Issue #7. Signing secrets are stored sealed with AES-256-GCM (`enc:v1:<key id>:<iv>:<ciphertext>`),
-- longer than the plaintext `whsec_` form; `pnpm db:migrate` seals plaintext rows once a key is set.
ALTER TABLE "subscriptions" ALTER COLUMN "secret" TYPE VARCHAR(512);
ALTER TABLE "subscriptions" ALTER COLUMN "previous_secret" TYPE VARCHAR(512);

-- The last line of defence behind authentication: no row can belong to an empty account.
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_account_id_not_empty" CHECK ("account_id" <> '');
ALTER TABLE "events" ADD CONSTRAINT "events_account_id_not_empty" CHECK ("account_id" <> '');
