/**
 * The Amazon SQS destination (@aws-sdk/client-sqs): one SendMessage per attempt, delivered once SQS
 * accepts it. The Standard Webhooks and custom headers travel as message attributes (at most 10,
 * AWS "Amazon SQS message attributes"), with `webhook-delivery-id`. On a FIFO queue the message
 * group is the subscription and the deduplication id the delivery id, so SQS drops a retry of a
 * message it stored within its 5-minute deduplication interval. Credentials come from the SDK's
 * default chain (environment, web identity, instance or task role).
 */
import {
  GetQueueUrlCommand,
  SendMessageCommand,
  SQSClient,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import type { BrokerTarget } from '@webhooks/shared';
import { publishClock, publishWithin, type BrokerPublisher, type PublisherOptions } from './publisher.js';

/** Most message attributes SQS takes on one message. */
export const maxMessageAttributes = 10;

/** How long a queue's URL is used without asking again, in ms. */
const knownQueueMs = 60_000;

/** Headers that describe the HTTP request, not the message: not carried. */
const httpOnly = new Set(['content-type', 'user-agent', 'content-length', 'authorization']);

/**
 * The message attributes of an attempt's `headers` plus its delivery id; null when more than SQS
 * takes ({@link maxMessageAttributes}).
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

const throttled = new Set(['ThrottlingException', 'RequestThrottled', 'KmsThrottled', 'Throttling']);
const refused = new Set([
  'AccessDenied',
  'AccessDeniedException',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'KmsAccessDenied',
  'KmsDisabled',
  'KmsNotFound',
  'InvalidParameterValue',
  'InvalidMessageContents',
  'UnsupportedOperation',
]);

/** Creates the publisher of an `aws` broker: SQS in `region`, at `url` when set (else the SDK's endpoint). */
export function createSqsPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  // The attempt is ours to retry, with the delivery's backoff: the SDK tries once.
  const client = new SQSClient({
    region: options.region ?? 'us-east-1',
    ...(url === '' ? {} : { endpoint: url }),
    maxAttempts: 1,
    requestHandler: { requestTimeout: timeoutMs },
  });
  const queues = new Map<string, { url: string; until: number }>();
  const session = { get: () => Promise.resolve(client) };

  const queueUrl = async (name: string, abortSignal: AbortSignal) => {
    const known = queues.get(name);
    if (known !== undefined && known.until > Date.now()) return known.url;
    const answer = await client.send(new GetQueueUrlCommand({ QueueName: name }), { abortSignal });
    const found = answer.QueueUrl ?? '';
    queues.set(name, { url: found, until: Date.now() + knownQueueMs });
    return found;
  };

  return {
    async publish(target: BrokerTarget, body, headers, { deliveryId, subscriptionId }) {
      const clock = publishClock();
      if (target.type !== 'sqs') return clock.failed('other', 'not an sqs destination');
      const attributes = messageAttributes(headers, deliveryId);
      if (attributes === null)
        return clock.failed(
          'broker_refused',
          `SQS takes at most ${maxMessageAttributes} message attributes: the Standard Webhooks headers, the delivery id and the custom headers are more`,
        );
      const controller = new AbortController();
      const result = await publishWithin(
        session,
        timeoutMs,
        clock,
        'SQS did not accept the message in time',
        async () => {
          try {
            const fifo = target.queue.endsWith('.fifo');
            await client.send(
              new SendMessageCommand({
                QueueUrl: await queueUrl(target.queue, controller.signal),
                MessageBody: body,
                MessageAttributes: attributes,
                ...(fifo ? { MessageGroupId: subscriptionId, MessageDeduplicationId: deliveryId } : {}),
              }),
              { abortSignal: controller.signal },
            );
            return clock.confirmed();
          } catch (error) {
            const name = awsError(error);
            if (name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue') {
              queues.delete(target.queue);
              return clock.failed(
                'broker_refused',
                `SQS has no queue named "${target.queue}" in ${options.region ?? 'its region'}`,
                error,
              );
            }
            if (refused.has(name))
              return clock.failed('broker_refused', `SQS refused the message (${name})`, error);
            if (throttled.has(name))
              return clock.failed('broker_unavailable', `SQS throttled the message (${name})`, error);
            log.debug({ err: error, queue: target.queue }, 'sqs send failed');
            return clock.failed('broker_unavailable', 'SQS could not be reached', error);
          }
        },
      );
      // An attempt past its deadline stops its request.
      controller.abort();
      return result;
    },
    close: async () => client.destroy(),
  };
}
