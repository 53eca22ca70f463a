/** The delivery path's shapes: a loaded delivery, an attempt's record, a round's key. */
import type { AwsCredentials, ClientCertificate, ReceiverAuth } from '@webhooks/shared';
import type { AttemptResult } from './attempt.js';
import type { DeliveryOutcome } from './outcome.js';

/** A delivery with what its attempt needs of the event and the subscription. */
export interface LoadedDelivery {
  id: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attemptsMade: number;
  /** The round it is in (0 the first; a retry or recovery starts attempts made + 1). */
  round: number;
  event: { id: string; type: string; data: Record<string, unknown>; occurredAt: Date };
  subscription: {
    id: string;
    callbackUrl: string;
    webhookId: string | null;
    kind: string | null;
    /** `pending` while its callback has not answered its challenge (CALLBACK_VERIFICATION). */
    status: 'active' | 'disabled' | 'pending';
    secret: string;
    previousSecret: string | null;
    previousSecretExpiresAt: Date | null;
    consecutiveFailures: number;
    /** Attempts a second at most (`rate_limit`), null for no limit. */
    rateLimit: number | null;
    /** `fifo`: one delivery at a time, in acceptance order (fifo.ts). */
    ordering: 'none' | 'fifo';
    accountId: string;
    /** Custom headers sent with every attempt, by lower-case name (checked when they were set). */
    headers: Record<string, string>;
    /** The client certificate presented to the callback's server (mutual TLS), or null. */
    clientCertificate: ClientCertificate | null;
    /** How the service authenticates to the receiver beside the signature, or null. */
    auth: ReceiverAuth | null;
    /** An AWS destination's customer-owned credentials, or null for the deployment's own. */
    awsCredentials: AwsCredentials | null;
    /** The transformation run on each webhook before it is sent (transformation.ts), or null. */
    transformation: string | null;
  };
  /** For a FIFO subscription, whether this is its head; always true otherwise. */
  isHead: boolean;
}

/** What {@link DeliveryStore.record} writes for one attempt. */
export interface AttemptRecord {
  delivery: LoadedDelivery;
  result: AttemptResult;
  outcome: DeliveryOutcome;
  /** The in-flight limit the attempt was sent under (shows throttling in the delivery log). */
  inFlightLimit: number;
}

/** A delivery row's key and round: what names its job. */
export interface DeliveryKey {
  eventId: string;
  subscriptionId: string;
  round: number;
}
