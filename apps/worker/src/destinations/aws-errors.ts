/**
 * What an AWS service's error means for an attempt, by the error's name (the SDK's `name`, an
 * EventBridge entry's `ErrorCode`): a missing resource or a refusal no retry cures is
 * `broker_refused`, a throttle `broker_throttled` (retried with the backoff, not counted by the
 * breaker), anything else `broker_unavailable`. Names from each service's API reference ("Errors").
 */
import type { RequestErrorClass } from '../delivery/attempt.js';

/** Throttles: SQS, SNS, EventBridge, Kinesis (`ProvisionedThroughputExceeded…`, `LimitExceeded…`), S3 (`SlowDown`), KMS. */
const throttled = new Set([
  'ThrottlingException',
  'Throttling',
  'Throttled',
  'ThrottledException',
  'RequestThrottled',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'ProvisionedThroughputExceededException',
  'LimitExceededException',
  'SlowDown',
  'KmsThrottled',
  'KMSThrottlingException',
]);

/** A queue, topic, bus, stream or bucket that does not exist. */
const missing = new Set([
  'QueueDoesNotExist',
  'AWS.SimpleQueueService.NonExistentQueue',
  'NotFound',
  'NotFoundException',
  'ResourceNotFoundException',
  'NoSuchBucket',
]);

/** Errors no retry cures: permissions, the message itself, a bucket in another region. */
const refused = new Set([
  'AccessDenied',
  'AccessDeniedException',
  'AuthorizationError',
  'AuthorizationErrorException',
  'NotAuthorizedForSourceException',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'SignatureDoesNotMatch',
  'KmsAccessDenied',
  'KmsDisabled',
  'KmsNotFound',
  'KMSAccessDeniedException',
  'KMSDisabledException',
  'KMSNotFoundException',
  'KMSInvalidStateException',
  'InvalidParameter',
  'InvalidParameterException',
  'InvalidParameterValue',
  'InvalidArgument',
  'InvalidArgumentException',
  'ValidationException',
  'InvalidMessageContents',
  'MalformedDetail',
  'EntityTooLarge',
  'MetadataTooLarge',
  'PermanentRedirect',
  'UnsupportedOperation',
]);

/** The AWS error name of `error` (the SDK's `name`), or ''. */
export function awsErrorName(error: unknown): string {
  return String((error as { name?: unknown } | null)?.name ?? '');
}

/**
 * The error class and stored message of a failed write of `service` (such as `SQS`) to its
 * `resource` (such as `queue`) `name` in `region`, from the AWS error name `code`.
 */
export function awsFailure(
  code: string,
  write: { service: string; resource: string; name: string; region: string },
): { errorClass: RequestErrorClass; message: string } {
  const { service, resource, name, region } = write;
  if (missing.has(code))
    return {
      errorClass: 'broker_refused',
      message: `${service} has no ${resource} named "${name}" in ${region}`,
    };
  if (refused.has(code))
    return {
      errorClass: 'broker_refused',
      message: `${service} refused the write to ${resource} "${name}" (${code})`,
    };
  if (throttled.has(code))
    return {
      errorClass: 'broker_throttled',
      message: `${service} throttled the write to ${resource} "${name}" (${code})`,
    };
  return { errorClass: 'broker_unavailable', message: `${service} could not be reached` };
}
