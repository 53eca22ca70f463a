/**
 * A client application receiving webhooks, as the demo runs it: every delivery's Standard Webhooks
 * signature is verified with the `standardwebhooks` package (the same code a real client writes;
 * docs/api.md shows it) before it is answered 200. It counts what arrives, can fail a route's first
 * answers (to show retries), and notes duplicates per `webhook-id`. The HTTP server is the project's
 * one receiver (`scripts/lib/receiver.ts`).
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { startReceiver, type ReceivedRequest } from '../lib/receiver.js';

/** One verified delivery as received. */
export interface Receipt {
  route: string;
  webhookId: string;
  /** `performance.timeOrigin + performance.now()` at arrival, in ms. */
  at: number;
  payload: { timestamp: string; type?: string; webhook_id?: string; data: Record<string, unknown> };
}

/** Options of {@link startClientReceiver}. */
export interface ClientReceiverOptions {
  /** Signing secret per route path (`/calls`), from the subscription's create response; may be filled later. */
  secrets: Map<string, string>;
  /** Route → how many of its first requests answer 500 (to show retries). */
  failFirst?: Map<string, number>;
  /** Called for each verified delivery answered 200. */
  onReceipt?: (receipt: Receipt) => void;
}

/** A running client receiver with its counters. */
export interface ClientReceiver {
  url: string;
  /** Verified deliveries answered 200, first receipt per route and webhook-id. */
  receipts: Map<string, Receipt>;
  /** Deliveries received again after a 200 for the same route and webhook-id. */
  duplicates: number;
  /** Requests whose signature did not verify (answered 401). */
  signatureFailures: number;
  /** Requests deliberately answered 500. */
  failedOnPurpose: number;
  /** webhook-ids that were answered 500 at least once, per route (`<route> <webhook-id>`). */
  retried: Set<string>;
  close(): Promise<void>;
}

/** Starts a client receiver on an ephemeral port of 127.0.0.1. */
export async function startClientReceiver(options: ClientReceiverOptions): Promise<ClientReceiver> {
  const verifiers = new Map<string, Webhook>();
  const verifierOf = (route: string) => {
    const secret = options.secrets.get(route);
    if (secret !== undefined && !verifiers.has(route)) verifiers.set(route, new Webhook(secret));
    return verifiers.get(route);
  };
  const failLeft = new Map(options.failFirst ?? []);
  const state = {
    receipts: new Map<string, Receipt>(),
    duplicates: 0,
    signatureFailures: 0,
    failedOnPurpose: 0,
    retried: new Set<string>(),
  };
  const answer = (request: ReceivedRequest): number => {
    const at = performance.timeOrigin + performance.now();
    const route = request.path;
    const verifier = verifierOf(route);
    let payload: Receipt['payload'];
    try {
      if (!verifier) throw new WebhookVerificationError('unknown route');
      payload = verifier.verify(
        request.body,
        request.headers as Record<string, string>,
      ) as Receipt['payload'];
    } catch {
      state.signatureFailures += 1;
      return 401;
    }
    const webhookId = String(request.headers['webhook-id']);
    const key = `${route} ${webhookId}`;
    const left = failLeft.get(route) ?? 0;
    if (left > 0) {
      failLeft.set(route, left - 1);
      state.failedOnPurpose += 1;
      state.retried.add(key);
      return 500;
    }
    if (state.receipts.has(key)) state.duplicates += 1;
    else {
      const receipt = { route, webhookId, at, payload };
      state.receipts.set(key, receipt);
      options.onReceipt?.(receipt);
    }
    return 200;
  };
  const receiver = await startReceiver({ answer, keepRequests: false });
  return Object.assign(state, { url: receiver.url, close: () => receiver.close() });
}
