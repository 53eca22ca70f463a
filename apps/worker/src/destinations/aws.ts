/**
 * The AWS destinations of an `aws` broker entry: Amazon SQS (SendMessage) and Amazon SNS (Publish),
 * one write per attempt, delivered once the service accepts it. The Standard Webhooks and custom
 * headers travel as message attributes (at most 10 on either: AWS, "Amazon SQS message attributes",
 * "Amazon SNS message attributes"), with `webhook-delivery-id`. On a FIFO queue or topic the message
 * group is the subscription and the deduplication id the delivery id, so a retry of a message
 * already stored is dropped within the 5-minute deduplication interval. Credentials come from the
 * SDK's default chain (environment, web identity, instance or task role).
 */
import {
  GetQueueUrlCommand,
  SendMessageCommand,
  SQSClient,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import type { BrokerTarget } from '@webhooks/shared';
import {
  publishClock,
  publishWithin,
  type BrokerPublisher,
  type PublishClock,
  type PublisherOptions,
} from './publisher.js';

/** Most message attributes SQS or SNS takes on one message. */
export const maxMessageAttributes = 10;

/** How long a queue's URL is used without asking again, in ms. */
const knownQueueMs = 60_000;

/** Queue URLs kept at most, across accounts; the oldest goes first (a miss costs one GetQueueUrl). */
const maxKnownQueues = 1_000;

/** Headers that describe the HTTP request, not the message: not carried. */
const httpOnly = new Set(['content-type', 'user-agent', 'content-length', 'authorization']);

/**
 * The message attributes of an attempt's `headers` plus its delivery id; null when more than SQS
 * or SNS takes ({@link maxMessageAttributes}).
 */
export function messageAttributes(
  headers: Record<string, string>,
  deliveryId: string,
): Record<string, MessageAttributeValue> | null {
  const carried = Object.entries(headers).filter(([name]) => !httpOnly.has(name.toLowerCase()));
  carried.push(['webhook-delivery-id', deliveryId]);
  if (carried.length > maxMessageAttributes) return null;
  return Object.fromEntries(
    carried.map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
  );
}

/** The AWS error name of `error` (the SDK's `name`), or ''. */
const awsError = (error: unknown) => String((error as { name?: unknown }).name ?? '');

const throttled = new Set([
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'RequestThrottled',
  'KmsThrottled',
]);
/** What SQS or SNS answers for a queue or topic that does not exist. */
const missing = new Set([
  'QueueDoesNotExist',
  'AWS.SimpleQueueService.NonExistentQueue',
  'NotFound',
  'NotFoundException',
]);
/** Errors no retry cures: credentials, permissions, the message itself. */
const refused = new Set([
  'AccessDenied',
  'AccessDeniedException',
  'AuthorizationError',
  'AuthorizationErrorException',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'KmsAccessDenied',
  'KmsDisabled',
  'KmsNotFound',
  'InvalidParameter',
  'InvalidParameterException',
  'InvalidParameterValue',
  'InvalidMessageContents',
  'UnsupportedOperation',
]);

/** The failed attempt of an AWS error from `service` writing to `name`. */
function failure(clock: PublishClock, service: string, name: string, region: string, error: unknown) {
  const code = awsError(error);
  if (missing.has(code))
    return clock.failed(
      'broker_refused',
      `${service} has no ${service === 'SQS' ? 'queue' : 'topic'} named "${name}" in ${region}`,
      error,
    );
  if (refused.has(code))
    return clock.failed('broker_refused', `${service} refused the message (${code})`, error);
  if (throttled.has(code))
    return clock.failed('broker_unavailable', `${service} throttled the message (${code})`, error);
  return clock.failed('broker_unavailable', `${service} could not be reached`, error);
}

/** Creates the publisher of an `aws` broker in `region`, at endpoint `url` when set (else the SDK's own). */
export function createAwsPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  const region = options.region ?? 'us-east-1';
  // The attempt is ours to retry, with the delivery's backoff: the SDK tries once.
  const settings = {
    region,
    ...(url === '' ? {} : { endpoint: url }),
    maxAttempts: 1,
    requestHandler: { requestTimeout: timeoutMs },
  };
  const sqs = new SQSClient(settings);
  const sns = new SNSClient(settings);
  const queues = new Map<string, { url: string; until: number }>();
  const session = { get: () => Promise.resolve(null) };

  const queueUrl = async (name: string, abortSignal: AbortSignal) => {
    const known = queues.get(name);
    if (known !== undefined && known.until > Date.now()) return known.url;
    const answer = await sqs.send(new GetQueueUrlCommand({ QueueName: name }), { abortSignal });
    const found = answer.QueueUrl ?? '';
    queues.delete(name);
    queues.set(name, { url: found, until: Date.now() + knownQueueMs });
    if (queues.size > maxKnownQueues) queues.delete(queues.keys().next().value!);
    return found;
  };

  return {
    async publish(target: BrokerTarget, body, headers, { deliveryId, subscriptionId }) {
      const clock = publishClock();
      if (target.type !== 'sqs' && target.type !== 'sns')
        return clock.failed('other', 'not an aws destination');
      const [service, name] = target.type === 'sqs' ? ['SQS', target.queue] : ['SNS', target.topicArn];
      const attributes = messageAttributes(headers, deliveryId);
      if (attributes === null)
        return clock.failed(
          'broker_refused',
          `${service} takes at most ${maxMessageAttributes} message attributes: the Standard Webhooks headers, the delivery id and the custom headers are more`,
        );
      const fifo = name.endsWith('.fifo')
        ? { MessageGroupId: subscriptionId, MessageDeduplicationId: deliveryId }
        : {};
      const controller = new AbortController();
      const result = await publishWithin(
        session,
        timeoutMs,
        clock,
        `${service} did not accept the message in time`,
        async () => {
          try {
            const abortSignal = controller.signal;
            if (target.type === 'sqs')
              await sqs.send(
                new SendMessageCommand({
                  QueueUrl: await queueUrl(target.queue, abortSignal),
                  MessageBody: body,
                  MessageAttributes: attributes,
                  ...fifo,
                }),
                { abortSignal },
              );
            else
              await sns.send(
                new PublishCommand({
                  TopicArn: target.topicArn,
                  Message: body,
                  MessageAttributes: attributes,
                  ...fifo,
                }),
                { abortSignal },
              );
            return clock.confirmed();
          } catch (error) {
            if (target.type === 'sqs') queues.delete(target.queue);
            log.debug({ err: error, service, name }, 'aws write failed');
            return failure(clock, service, name, region, error);
          }
        },
      );
      // An attempt past its deadline stops its request.
      controller.abort();
      return result;
    },
    close: async () => {
      sqs.destroy();
      sns.destroy();
    },
  };
}
