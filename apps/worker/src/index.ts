/** @webhooks/worker: the delivery worker, for its entry point, tests and tools. */
export { loadWorkerConfig, workerEnvSchema, type WorkerConfig } from './config.js';
export { startWorker, userAgent, type RunningWorker } from './worker.js';
export { decideOutcome, type DeliveryOutcome } from './delivery/outcome.js';
export { eventAcceptedAt } from './delivery/expiry.js';
export {
  classifyError,
  createAttemptSender,
  type AttemptResult,
  type AttemptSender,
} from './delivery/attempt.js';
export { parseRetryAfter, retryDelayMs, type DeliveryPolicy } from './delivery/backoff.js';
export { followUpJob, type InlineCandidate } from './delivery/inline.js';
export { backgroundRoom, quietReserve, worthAdmitting } from './scheduling/admission-room.js';
export { inSlotWaitRule, waitsInSlot, type InSlotWaitRule } from './delivery/in-slot-wait.js';
export { deleteExpiredRows, type RetentionReport } from './retention.js';
