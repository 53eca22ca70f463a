-- A subscription waits as 'pending' until its callback answers a signed challenge (CALLBACK_VERIFICATION=challenge).
ALTER TYPE "SubscriptionStatus" ADD VALUE IF NOT EXISTS 'pending';
