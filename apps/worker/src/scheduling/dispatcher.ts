/**
 * What the account scheduler hands admissions to (`delivery/dispatch.ts` decides: inline attempt or
 * job). Defined here, so scheduling depends on no delivery module.
 */
import type { Lane } from './admission-script.js';

/** A delivery's first round as it is scheduled: who it is for, and whether its row is new. */
export interface ScheduledDelivery {
  accountId: string;
  eventId: string;
  subscriptionId: string;
  /** The publishing request's `X-Request-Id`, for the attempt's log lines. */
  requestId?: string | undefined;
  /** The fan-out created its row just now: only then may it be attempted inline (a rerun's may have its job). */
  created?: boolean;
}

/** A delivery one admission took. */
export interface AdmittedDelivery<D extends ScheduledDelivery> {
  /** Its delivery job id (`<event id>.<subscription id>`). */
  jobId: string;
  accountId: string;
  requestId?: string;
  lane: Lane;
  /** Its entry says its row was new when it was scheduled (it may be attempted inline). */
  created: boolean;
  /** A job BullMQ holds already, parked until this turn (`AccountScheduler.turns`): it is woken. */
  held: boolean;
  /** The schedule call's own delivery, admitted by that call into the front lane, with its row new. */
  own?: D;
}

/** What a scheduler gives its dispatcher. */
export interface SchedulerHooks {
  /** Releases admitted entries whose jobs exist or whose attempts ended. @throws ioredis' errors */
  confirm(jobIds: readonly string[]): Promise<void>;
  /** Called whenever attempts ended and freed slots: the scheduler may admit again. */
  slotsFreed(): void;
}

/** Takes the scheduler's admissions (`delivery/dispatch.ts`). */
export interface AdmissionDispatcher<D extends ScheduledDelivery> {
  connect(hooks: SchedulerHooks): void;
  /** The most an admission may take now, held until `release`, so overlapping admissions do not count slots twice. */
  reserve(): { limit: number; release(): void };
  /** Whether a background admission is worth a script call now. */
  worthAdmitting(): boolean;
  /**
   * Hands over one admission: each delivery ends attempted or with its job, then `confirm` is called
   * for it. Resolves once the call's own attempts ended or their deadline passed.
   * @throws ioredis' or BullMQ's errors when Redis cannot be reached (the entries stay leased, re-admitted)
   */
  dispatch(admitted: ReadonlyArray<AdmittedDelivery<D>>): Promise<void>;
  /** Waits for attempts still followed in the background. */
  close(): Promise<void>;
}
