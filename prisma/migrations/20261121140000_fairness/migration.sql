-- Issue #8. A subscription may cap its deliveries per second (null: no cap), as Svix's endpoints do.
ALTER TABLE "subscriptions" ADD COLUMN "rate_limit" INTEGER;
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_rate_limit_positive" CHECK ("rate_limit" >= 1);

-- The in-flight limit each attempt was sent under, so the delivery log shows when a subscription
-- was throttled (null for attempts made before this column existed).
ALTER TABLE "delivery_attempts" ADD COLUMN "in_flight_limit" INTEGER;
