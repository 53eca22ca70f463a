/**
 * @webhooks/worker: the delivery worker, for whoever runs it in a process of their own (tests,
 * the bench, the demo): its configuration, `startWorker`, and the few parts the bench measures
 * alone (the callback sender, the age rule, retention).
 */
export { loadWorkerConfig, workerEnvSchema, type WorkerConfig } from './config.js';
export { startWorker, type RunningWorker } from './worker.js';
export { userAgent } from './delivering.js';
export { eventAcceptedAt } from './delivery/expiry.js';
export { createAttemptSender, type AttemptSender } from './delivery/attempt.js';
export { deleteExpiredRows, type RetentionReport } from './retention.js';
