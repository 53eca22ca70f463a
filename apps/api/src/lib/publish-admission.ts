/** What every publish through the API passes before queueing: the backlog bound, then the daily payload quota. */
import type { FastifyBaseLogger } from 'fastify';
import { PublishUnavailableError } from '@webhooks/shared';
import type { AccountQuotas } from './account-quotas.js';
import { backlogRetryAfterSeconds, type BacklogWatch } from './backlog.js';
import { HttpProblem } from './problem.js';
import { publishProblem } from './publish-problem.js';

/** The bound and the quota a publish passes. */
export interface PublishAdmission {
  backlog: Pick<BacklogWatch, 'refusal'>;
  quotas: Pick<AccountQuotas, 'chargePayload'>;
}

/**
 * Admits a publish of `data` for `accountId`, or throws why not.
 * @throws HttpProblem 503 `/problems/backlog-full` with `Retry-After` past the backlog bound (accounts
 *   over their share); 429 past the payload quota; 503 with `Retry-After` when Redis cannot count it
 */
export async function admitPublish(
  admission: PublishAdmission,
  accountId: string,
  data: unknown,
  log: FastifyBaseLogger,
): Promise<void> {
  const full = await admission.backlog.refusal(accountId);
  if (full !== null) {
    throw new HttpProblem(503, 'backlog-full', `${full}; nothing was accepted. Retry later.`, undefined, {
      'retry-after': String(backlogRetryAfterSeconds),
    });
  }
  try {
    await admission.quotas.chargePayload(accountId, Buffer.byteLength(JSON.stringify(data)));
  } catch (error) {
    if (error instanceof HttpProblem) throw error;
    // Redis is the publisher's too: an event that cannot be counted cannot be queued either.
    throw publishProblem(
      new PublishUnavailableError('the payload quota could not be counted', { cause: error }),
      log,
    );
  }
}
