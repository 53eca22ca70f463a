/** What a failed API call means to the person looking at the portal, and what to do next. */
import type { Problem } from '@webhooks/client';

/** A sentence for an answer with `status` (0: the API could not be reached) and its problem details. */
export function describeFailure(status: number, problem: Problem | undefined): string {
  if (status === 401)
    return 'Your portal link has expired, or was used already. Ask your platform for a new link, then open it.';
  if (status === 0 || status === 503)
    return 'The webhook service is unavailable right now. Try again in a minute.';
  if (status === 429) return 'Too many requests from your account. Wait a minute, then reload the page.';
  return problem?.detail ?? problem?.title ?? `The service answered ${status}.`;
}
