/**
 * One step of one round of a delivery, the path every caller shares: expiry; one admission (`gate.ts`);
 * the read; the host share if not taken; transformation, send, outcome, record; one release. A step
 * that cannot go returns a wait using no attempt; attempts are counted from the row, so a re-created
 * job continues. docs/delivery.md, "One delivery, step by step".
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { SpanKind } from '@opentelemetry/api';
import {
  attemptsBeforeRound,
  brokerCapHost,
  brokerTarget,
  congestionSignal,
  inSpan,
  urlForSpan,
  type TransformationRunner,
} from '@webhooks/shared';
import type { WorkerMetrics } from '../metrics.js';
import type { AttemptResult, AttemptSender } from './attempt.js';
import { claimedWaitMs, type AttemptClaims } from './claim.js';
import type { DeliveryPolicy } from './backoff.js';
import { isExpired, roundStartedAt } from './expiry.js';
import type { DeliveryGate } from './gate.js';
import type { HostAsk, HostGate } from './host-gate.js';
import { parkedUntil, type ParkedDeliveries } from './parked.js';
import { countsForBreaker, decideOutcome } from './outcome.js';
import type { ReceiverAuthorizer } from './receiver-authorization.js';
import { buildAttemptRequest } from './request.js';
import { observeAttempt } from './observe-attempt.js';
import { cancelledByTransformation, transformStep } from './transform-step.js';
import {
  handsOverNext,
  oneInFlight,
  sentInOrder,
  type DeliveryStep,
  type EndedWithoutAttempt,
  type RoundRef,
} from './step.js';
import type { DeliveryStore, LoadedDelivery } from './store.js';

export interface DeliverDeps {
  store: DeliveryStore;
  sender: AttemptSender;
  /** The receiver's `Authorization`, from the subscription's `auth`. */
  authorizer: ReceiverAuthorizer;
  /** One run of a round at a time (claim.ts). */
  claims: AttemptClaims;
  /** The admission and release: subscription slot, claim, turn, and the host's share when known. */
  gate: DeliveryGate;
  /** The host's share asked alone: its host learnt only at the read, or moved by a transformation. */
  hostGate: HostGate;
  /** Runs subscriptions' transformations; null when TRANSFORMATIONS=false. */
  transformations: TransformationRunner | null;
  /** Backoff (the attempts are the round's own, {@link RoundRef.maxAttempts}). */
  policy: Pick<DeliveryPolicy, 'backoffMs'>;
  /** DELIVERY_MAX_AGE, in ms. */
  maxAgeMs: number;
  log: Logger;
  metrics: Pick<WorkerMetrics, 'deliveries' | 'attemptDuration' | 'attemptInFlightLimit' | 'deliveryLatency'>;
  /** Ordered delivery (fifo.ts): the watch on an account's earlier events' fan-outs. */
  fifo: { earlierFanOut: (accountId: string, eventId: string) => Promise<boolean> };
  /** The shard's count of parked deliveries per account, which the API's backlog bound reads. */
  parked: ParkedDeliveries;
}

/** How long a new round's job waits for the API to mark its row (ms); past it, the round was given up. */
const roundStartGraceMs = 60_000;

/** How long a delivery to a `pending` (unverified) subscription waits before looking again (ms), using no attempt. */
const unverifiedCallbackWaitMs = 10_000;

/** How long a FIFO delivery that is not its head waits before looking again (ms); the head's end wakes it sooner. */
const fifoTurnWaitMs = 1_000;

/** How long a FIFO head waits for an earlier event's fan-out to store its deliveries, in ms. */
const fifoFanOutWaitMs = 50;

/** The host whose cap an attempt to `url` counts in: a broker destination's is its broker's. */
function capHost(url: string): string {
  const broker = brokerTarget(url);
  return broker === null ? new URL(url).hostname : brokerCapHost(broker);
}

/** What an attempt to `subscription` asks of its callback's host. */
function hostAsk(subscription: LoadedDelivery['subscription']): HostAsk {
  const ask = { hostname: capHost(subscription.callbackUrl), accountId: subscription.accountId };
  return subscription.rateLimit === null ? ask : { ...ask, rate: subscription.rateLimit };
}

/** Most subscriptions whose host a process remembers ({@link createDeliver}'s `knownHosts`). */
const maxKnownHosts = 10_000;

/** The host slot a step holds, if any: the hostname asked and the account it counts in. */
type HeldHost = { hostname: string; accountId: string } | null;

/** What happened while the step held its slot. */
type WithinSlot =
  | { kind: 'done'; result: Exclude<EndedWithoutAttempt, 'expired'>; fifo: boolean }
  | { kind: 'wait'; waitMs: number }
  | { kind: 'sent'; delivery: LoadedDelivery; result: AttemptResult };

/** One step of `ref`'s round; `onConfirmed` (must not throw) runs once confirmed, while the record is written. */
export type Deliver = (ref: RoundRef, onConfirmed?: () => void) => Promise<DeliveryStep>;

/**
 * Creates the step. @throws (the step) pg's and ioredis' errors, and a stored secret no key opens: the
 *   caller defers, using no attempt
 */
export function createDeliver(deps: DeliverDeps): Deliver {
  /** Each subscription's last host, so a job's run (read after its admission) asks it; the read corrects it. */
  const knownHosts = new Map<string, HostAsk>();
  /** The work under the slot. `host`: swapped for the loaded or transformed URL's; the old one joins `releases`. */
  const withinSlot = async (
    ref: RoundRef,
    releases: Array<Promise<void>>,
    host: { held: HeldHost },
  ): Promise<WithinSlot> => {
    /** Holds a slot of `hostname`, counting `rate` when given; else says how long to wait. */
    const hold = async ({ hostname, accountId, rate }: HostAsk): Promise<number> => {
      const { held } = host;
      if (held?.hostname === hostname && held.accountId === accountId) return 0;
      if (held !== null) releases.push(deps.hostGate.release(held.hostname, held.accountId, ref.jobId));
      host.held = null;
      const counted =
        rate === undefined ? undefined : { subscriptionId: ref.subscriptionId, perSecond: rate };
      const waitMs = await deps.hostGate.acquire(hostname, accountId, ref.jobId, counted);
      if (waitMs === 0) host.held = { hostname, accountId };
      return waitMs;
    };
    const delivery = ref.loaded ?? (await deps.store.load(ref));
    if (delivery === null) return { kind: 'done', result: 'dropped', fifo: false };
    const fifo = delivery.subscription.ordering === 'fifo';
    if (delivery.round > ref.round) return { kind: 'done', result: 'not_pending', fifo };
    if (delivery.round < ref.round) {
      // The API enqueues a round before it marks the row; give it time, then take it as rolled back.
      return Date.now() - ref.enqueuedAt < roundStartGraceMs
        ? { kind: 'wait', waitMs: 1_000 }
        : { kind: 'done', result: 'not_pending', fifo };
    }
    if (delivery.status !== 'pending') return { kind: 'done', result: 'not_pending', fifo };
    const { event, subscription } = delivery;
    if (subscription.status === 'disabled') {
      await deps.store.cancel(delivery.id);
      return { kind: 'done', result: 'cancelled', fifo };
    }
    // A callback moved to a URL not yet verified: its deliveries wait for the challenge's answer.
    if (subscription.status === 'pending') return { kind: 'wait', waitMs: unverifiedCallbackWaitMs };
    if (fifo) {
      if (!delivery.isHead) return { kind: 'wait', waitMs: fifoTurnWaitMs };
      // A head read after its claim and the watch (`RoundRef.claimedAhead`) is checked already.
      if (ref.claimedAhead !== true) {
        if (await deps.fifo.earlierFanOut(subscription.accountId, event.id)) {
          return { kind: 'wait', waitMs: fifoFanOutWaitMs };
        }
        // The head again after the watch and the claim: an earlier event fanned out meanwhile, or
        // another run attempted a handed-over head, must not repeat.
        const unchanged = await deps.store.isUnchangedHead({
          eventId: event.id,
          subscriptionId: subscription.id,
          round: delivery.round,
          attemptsMade: delivery.attemptsMade,
        });
        if (!unchanged) return { kind: 'wait', waitMs: fifoTurnWaitMs };
      }
    }
    // Host cap and rate limit admit the attempt before its transformation runs, so a wait costs no run.
    const { accountId } = subscription;
    const wanted = hostAsk(subscription);
    if (knownHosts.size >= maxKnownHosts) knownHosts.clear();
    knownHosts.set(subscription.id, wanted);
    const waitMs = await hold(wanted);
    if (waitMs > 0) return { kind: 'wait', waitMs };
    const transformed = await transformStep(deps.transformations, delivery);
    if (transformed.kind === 'wait') return transformed;
    if (transformed.kind === 'cancel') {
      await deps.store.cancel(delivery.id, cancelledByTransformation);
      return { kind: 'done', result: 'cancelled', fifo };
    }
    if (transformed.kind === 'failed') return { kind: 'sent', delivery, result: transformed.result };
    // A transformation that moved the URL to another host goes on that host's slot.
    const hostname = capHost(transformed.url);
    const movedWaitMs = await hold({ hostname, accountId });
    if (movedWaitMs > 0) return { kind: 'wait', waitMs: movedWaitMs };
    const callbackUrl = new URL(transformed.url);
    const { body, headers } = buildAttemptRequest(event, subscription, new Date(), transformed.transformed);
    // A span per attempt, retries included, in the trace the job carries (the event's).
    const result = await inSpan(
      'webhooks-worker',
      'webhook attempt',
      {
        'webhook.delivery_id': delivery.id,
        'webhook.event_id': event.id,
        'webhook.subscription_id': subscription.id,
        'webhook.attempt': delivery.attemptsMade + 1,
        'server.address': hostname,
        'url.full': urlForSpan(callbackUrl),
      },
      async (annotate) => {
        const sent = await deps.authorizer.send(subscription.id, subscription.auth, (authorization) =>
          deps.sender.send(
            transformed.url,
            body,
            authorization === undefined ? headers : { ...headers, authorization },
            subscription.clientCertificate,
            {
              accountId,
              subscriptionId: subscription.id,
              deliveryId: delivery.id,
              eventId: event.id,
              eventType: event.type,
              occurredAt: event.occurredAt,
              awsCredentials: subscription.awsCredentials,
            },
          ),
        );
        annotate({ 'http.response.status_code': sent.statusCode, 'webhook.error': sent.errorClass });
        return sent;
      },
      SpanKind.CLIENT,
    );
    return { kind: 'sent', delivery, result };
  };

  const step = async (ref: RoundRef, expired: boolean, onConfirmed?: () => void): Promise<DeliveryStep> => {
    const { eventId, subscriptionId, round } = ref;
    if (expired) {
      await deps.store.expire({ eventId, subscriptionId, round });
      deps.log.warn(
        { eventId, subscriptionId, requestId: ref.requestId, reason: 'expired' },
        'delivery given up',
      );
      // Rare enough to look, whatever the subscription's ordering: only a FIFO one has a next head.
      return { kind: 'ended', result: 'expired', nextInOrder: true };
    }
    const inOrder = sentInOrder(ref);
    const turn = ref.needsTurn === true ? { accountId: ref.accountId, requestId: ref.requestId } : undefined;
    // The host share is asked in the admission when the read came first (inline) or the host is known.
    const asked = inOrder
      ? undefined
      : ref.loaded === undefined
        ? knownHosts.get(subscriptionId)
        : hostAsk(ref.loaded.subscription);
    const admission = inOrder ? oneInFlight : await deps.gate.acquire(subscriptionId, ref.jobId, turn, asked);
    if (!admission.admitted)
      return admission.inTurnList === true
        ? { kind: 'wait', waitMs: admission.waitMs, inTurnList: true }
        : { kind: 'wait', waitMs: admission.waitMs };
    const admittedAt = performance.now();
    const releases: Array<Promise<void>> = [];
    const host: { held: HeldHost } = {
      held:
        admission.host === null || asked === undefined
          ? null
          : { hostname: admission.host, accountId: asked.accountId },
    };
    /** Gives gate slot, claim and host slot back in one script; never throws (a lost release ends with its lease). */
    const giveBack = (
      attempt: { signal: ReturnType<typeof congestionSignal>; sent: boolean } | null,
      heldMs = performance.now() - admittedAt,
    ) => {
      const { held } = host;
      host.held = null;
      if (!inOrder)
        releases.push(deps.gate.release(subscriptionId, ref.jobId, admission, attempt, heldMs, held));
      else if (held !== null) releases.push(deps.hostGate.release(held.hostname, held.accountId, ref.jobId));
      return Promise.all(releases);
    };
    let within: WithinSlot;
    try {
      within = await withinSlot(ref, releases, host);
    } catch (error) {
      await giveBack(null);
      throw error;
    }
    if (within.kind !== 'sent') {
      await giveBack(null);
      if (within.kind === 'wait') return within;
      return within.fifo
        ? { kind: 'ended', result: within.result, nextInOrder: true }
        : { kind: 'ended', result: within.result };
    }
    const { delivery, result } = within;
    const outcome = decideOutcome(result, delivery.attemptsMade - attemptsBeforeRound(round), {
      maxAttempts: ref.maxAttempts,
      backoffMs: deps.policy.backoffMs,
    });
    // The gate's slot goes back once recorded (it holds the claim), the host's with it.
    if (inOrder && host.held !== null) {
      releases.push(deps.hostGate.release(host.held.hostname, host.held.accountId, ref.jobId));
      host.held = null;
    }
    const heldMs = performance.now() - admittedAt;
    const attempt = {
      signal: congestionSignal(within.result),
      sent: countsForBreaker(within.result),
    };

    // An ordered delivery is sent one at a time, whatever its gate's limit.
    const { inFlightLimit } = delivery.subscription.ordering === 'fifo' ? oneInFlight : admission;
    const record = { delivery, result, outcome, inFlightLimit };
    const recorded =
      ref.recordAfter === undefined
        ? deps.store.record(record)
        : ref.recordAfter.then(() => deps.store.record(record));
    if (outcome.kind === 'succeeded') onConfirmed?.();
    try {
      await recorded;
    } finally {
      await giveBack(attempt, heldMs);
    }
    observeAttempt(deps, ref, delivery, result, outcome);
    deps.metrics.attemptInFlightLimit.observe(inFlightLimit);
    // BullMQ's failed reason is the operator's (queue dashboard), so it keeps the library's detail.
    const failure = `${result.errorClass}: ${result.errorDetail ?? result.errorMessage ?? ''}`;
    return outcome.kind !== 'retry' && delivery.subscription.ordering === 'fifo'
      ? { kind: 'attempted', outcome, failure, nextInOrder: true }
      : { kind: 'attempted', outcome, failure };
  };

  /** The step under its round's claim: taken by the admission, else here (ordered heads, expiry) unless held. */
  const claimedStep: Deliver = async (ref, onConfirmed) => {
    const expired = isExpired(
      roundStartedAt(ref.eventId, ref.round, ref.enqueuedAt),
      Date.now(),
      deps.maxAgeMs,
    );
    const claimHere = ref.claimedAhead !== true && (expired || sentInOrder(ref));
    if (claimHere && !(await deps.claims.take(ref.jobId))) return { kind: 'wait', waitMs: claimedWaitMs };
    let done: DeliveryStep | undefined;
    try {
      done = await step(ref, expired, onConfirmed);
    } finally {
      if (claimHere || ref.claimedAhead === true) {
        const dropped = deps.claims.drop(ref.jobId);
        // A recorded head's successor starts while this claim's drop is on its way, in the same write.
        if (done === undefined || !handsOverNext(done)) await dropped;
      }
    }
    if (done.kind === 'ended' && done.result !== 'not_pending')
      deps.metrics.deliveries.inc({ outcome: done.result === 'expired' ? 'given_up' : done.result });
    const dueAt = parkedUntil(done, Date.now());
    if (dueAt !== null) await deps.parked.park(ref.accountId, ref.jobId, dueAt);
    return done;
  };

  return claimedStep;
}
