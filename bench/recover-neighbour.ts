/**
 * A neighbour that recovers failed deliveries, for the fairness-across-accounts bench: its
 * subscriptions' failed deliveries are stored first, as if an outage had given them up, and then
 * recovered through `POST /api/webhooks/{id}/recover`, as a client does after fixing its receiver,
 * at the account's pace. Each recovered round takes its account's turns like any delivery.
 */
import { v7 as uuidv7 } from 'uuid';
import { sleep } from '../scripts/lib/wait.js';
import type { BenchStack } from './harness.js';

/**
 * Stores `perSubscription` failed deliveries (4 attempts made) for each of `subscriptionIds` of
 * `account`: that many events of an hour ago, each given up to every subscription.
 */
export async function seedFailedDeliveries(
  stack: BenchStack,
  account: string,
  subscriptionIds: readonly string[],
  perSubscription: number,
): Promise<void> {
  const at = Date.now() - 30 * 60_000;
  const eventIds = Array.from({ length: perSubscription }, (_, i) => uuidv7({ msecs: at + i }));
  await stack.prisma.$executeRaw`
    INSERT INTO events (id, account_id, type, data, occurred_at)
    SELECT e, ${account}, 'call.completed', '{"call_id": "recovered"}'::jsonb, now() - interval '30 minutes'
    FROM unnest(${eventIds}::uuid[]) AS e`;
  await stack.prisma.$executeRaw`
    INSERT INTO deliveries (id, event_id, subscription_id, status, attempts_made, last_status_code, last_error, updated_at)
    SELECT delivery_id(e, s), e, s, 'failed', 4, 500, 'http_status', now()
    FROM unnest(${eventIds}::uuid[]) AS e CROSS JOIN unnest(${[...subscriptionIds]}::uuid[]) AS s`;
}

/**
 * Recovers every failed delivery of the last hour of each of `subscriptionIds`, as `token`'s
 * account, following `continue_after` and waiting out 429 and 503 (`Retry-After`).
 *
 * @returns the rounds started
 */
export async function recoverAll(stack: BenchStack, token: string, subscriptionIds: readonly string[]) {
  let rounds = 0;
  const since = new Date(Date.now() - 60 * 60_000).toISOString();
  for (const id of subscriptionIds) {
    let body: Record<string, string> = { since };
    for (;;) {
      const response = await fetch(`${stack.apiUrl}/api/webhooks/${id}/recover`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (response.status === 429 || response.status === 503) {
        await sleep(1000 * Number(response.headers.get('retry-after') ?? '1'));
        continue;
      }
      if (response.status !== 202)
        throw new Error(`recover answered ${response.status}: ${await response.text()}`);
      const answer = (await response.json()) as {
        count: number;
        until: string;
        continue_after: string | null;
      };
      rounds += answer.count;
      if (answer.continue_after === null) break;
      body = { since, until: answer.until, after: answer.continue_after };
    }
  }
  return rounds;
}
