-- Idempotency keys of published events, kept in PostgreSQL when IDEMPOTENCY_STORE=postgresql, so
-- that they survive a Redis failover. One row per account and key; retention removes expired ones.
CREATE TABLE "idempotency_keys" (
    "account_id" VARCHAR(255) NOT NULL,
    "key_hash" CHAR(64) NOT NULL,
    "event_id" UUID NOT NULL,
    "payload_timestamp" VARCHAR(32) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("account_id", "key_hash")
);

CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");
