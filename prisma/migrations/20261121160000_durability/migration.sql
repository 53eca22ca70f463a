-- Issue #9. The round a delivery is in: 0 for the first, and for a manual retry or a recovery the
-- attempts made before it plus one. It names the round's BullMQ job (deliveryJobId), so the
-- reconciler can find or re-create the job of any pending delivery, and the processor can count
-- the round's attempts from the row rather than from a job that may have been re-created.
ALTER TABLE "deliveries" ADD COLUMN "round" INTEGER NOT NULL DEFAULT 0;

-- Retention deletes by age in batches; these keep each batch an index range scan.
CREATE INDEX "events_created_at_idx" ON "events" ("created_at");
CREATE INDEX "deliveries_created_at_idx" ON "deliveries" ("created_at");

-- The reconciler's scan: pending deliveries whose next attempt is overdue.
CREATE INDEX "deliveries_pending_next_attempt_at_idx" ON "deliveries" ("next_attempt_at") WHERE "status" = 'pending';
