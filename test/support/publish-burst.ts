/**
 * A burst of publishes through the API while a test fails Redis over: `POST /api/events` in rounds,
 * one request per account and round at once, until stopped, with every answer recorded.
 */
import type { ReceivedRequest } from '../../scripts/lib/receiver.js';
import type { TestApi } from './api.js';
import { sleep } from '../../scripts/lib/wait.js';

/** One refused publish: its status and its `Retry-After` header (undefined when absent). */
export interface RefusedPublish {
  status: number;
  retryAfter: unknown;
}

/** A running burst; its lists grow until {@link PublishBurst.stop} resolves. */
export interface PublishBurst {
  /** Ids of the events answered 202, in the order answered. */
  accepted: string[];
  refused: RefusedPublish[];
  /** Stops after the round in progress, and resolves once it is answered. */
  stop(): Promise<void>;
}

/**
 * Starts publishing `call.started` events for `accounts` through `api`, a round every `pauseMs`
 * ms (after the round before is answered).
 */
export function startPublishBurst(api: TestApi, accounts: readonly string[], pauseMs = 5): PublishBurst {
  const accepted: string[] = [];
  const refused: RefusedPublish[] = [];
  let publishing = true;
  const running = (async () => {
    while (publishing) {
      await Promise.all(
        accounts.map(async (account) => {
          const response = await api.app.inject({
            method: 'POST',
            url: '/api/events',
            headers: api.auth(account),
            payload: { type: 'call.started', data: {} },
          });
          if (response.statusCode === 202) accepted.push(response.json().id);
          else refused.push({ status: response.statusCode, retryAfter: response.headers['retry-after'] });
        }),
      );
      await sleep(pauseMs);
    }
  })();
  return {
    accepted,
    refused,
    async stop() {
      publishing = false;
      await running;
    },
  };
}

/** The `webhook-id` headers of `requests`: the ids of the events they delivered. */
export function deliveredEventIds(requests: readonly ReceivedRequest[]): Set<string> {
  return new Set(requests.map((request) => String(request.headers['webhook-id'])));
}
