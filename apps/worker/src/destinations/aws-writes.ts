/**
 * One attempt's write to an AWS service, per destination type, with the SDK's own clients: SQS
 * `SendMessage`, SNS `Publish`, EventBridge `PutEvents`, Kinesis `PutRecord`, S3 `PutObject`.
 * Headers travel as message attributes (SQS, SNS: at most 10, "Amazon SQS message attributes") or
 * user metadata (S3, `x-amz-meta-*`); EventBridge and Kinesis, which have neither, carry them with
 * the payload in one envelope (`awsEnvelope`). Every write carries the delivery id
 * (`webhook-delivery-id`); on a FIFO queue or topic it is the deduplication id, in S3 it is in the key.
 */
import { SendMessageCommand, type MessageAttributeValue, type SQSClient } from '@aws-sdk/client-sqs';
import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { PutRecordCommand, type KinesisClient } from '@aws-sdk/client-kinesis';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { awsEnvelope, keyFromPayload, objectKey, type AwsTarget } from '@webhooks/shared';
import type { DeliveryRef } from '../delivery/attempt.js';

/** Most message attributes SQS or SNS takes on one message. */
export const maxMessageAttributes = 10;

/** Headers that describe the HTTP request, not the message: not carried. */
const httpOnly = new Set(['content-type', 'user-agent', 'content-length', 'authorization']);

/** The headers a write carries: an attempt's `headers` but the HTTP request's own, with `webhook-delivery-id`. */
export function carriedHeaders(headers: Record<string, string>, deliveryId: string): Record<string, string> {
  const carried = Object.entries(headers).filter(([name]) => !httpOnly.has(name.toLowerCase()));
  carried.push(['webhook-delivery-id', deliveryId]);
  return Object.fromEntries(carried);
}

/** SQS or SNS message attributes of `carried` headers; null when more than {@link maxMessageAttributes}. */
export function messageAttributes(
  carried: Record<string, string>,
): Record<string, MessageAttributeValue> | null {
  const entries = Object.entries(carried);
  if (entries.length > maxMessageAttributes) return null;
  return Object.fromEntries(
    entries.map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
  );
}

/** The SDK clients of one `aws` broker entry, each made at its first use. */
export interface AwsClients {
  sqs(): SQSClient;
  sns(): SNSClient;
  eventBridge(): EventBridgeClient;
  kinesis(): KinesisClient;
  s3(): S3Client;
  /** The URL of SQS queue `name` (`GetQueueUrl`, cached). @throws the SDK's errors */
  queueUrl(name: string, abortSignal: AbortSignal): Promise<string>;
  /** Forgets queue `name`'s URL after a failed write (the queue may have been re-created). */
  forgetQueue(name: string): void;
}

/** One write: what it goes to, for its failure's message, and how it is sent. */
export interface AwsWrite {
  service: 'SQS' | 'SNS' | 'EventBridge' | 'Kinesis' | 'S3';
  resource: 'queue' | 'topic' | 'event bus' | 'stream' | 'bucket';
  name: string;
  /** Sends it; resolves once the service accepted it. @throws the SDK's errors, or one named by a failed entry's `ErrorCode` */
  send(abortSignal: AbortSignal): Promise<void>;
}

/** An EventBridge entry that failed, as an error named by its code (as the SDK names errors). */
class FailedEntryError extends Error {
  constructor(code: string, message: string) {
    super(message);
    this.name = code;
  }
}

/**
 * The write of `body` with `headers` to `target`, or why the message cannot be written (more
 * attributes than SQS or SNS take).
 */
export function awsWrite(
  target: AwsTarget,
  body: string,
  headers: Record<string, string>,
  delivery: DeliveryRef,
  clients: AwsClients,
): AwsWrite | { refused: string } {
  const carried = carriedHeaders(headers, delivery.deliveryId);
  switch (target.type) {
    case 'sqs':
    case 'sns': {
      const attributes = messageAttributes(carried);
      const service = target.type === 'sqs' ? 'SQS' : 'SNS';
      if (attributes === null)
        return {
          refused: `${service} takes at most ${maxMessageAttributes} message attributes: the Standard Webhooks headers, the delivery id and the custom headers are more`,
        };
      const name = target.type === 'sqs' ? target.queue : target.topicArn;
      const fifo = name.endsWith('.fifo')
        ? {
            MessageGroupId: keyFromPayload(body, target.messageGroup, delivery.subscriptionId, 'group'),
            MessageDeduplicationId: delivery.deliveryId,
          }
        : {};
      if (target.type === 'sqs')
        return {
          service: 'SQS',
          resource: 'queue',
          name,
          async send(abortSignal) {
            const QueueUrl = await clients.queueUrl(target.queue, abortSignal);
            await clients.sqs().send(
              new SendMessageCommand({
                QueueUrl,
                MessageBody: body,
                MessageAttributes: attributes,
                ...fifo,
              }),
              { abortSignal },
            );
          },
        };
      return {
        service: 'SNS',
        resource: 'topic',
        name,
        async send(abortSignal) {
          await clients
            .sns()
            .send(
              new PublishCommand({ TopicArn: name, Message: body, MessageAttributes: attributes, ...fifo }),
              { abortSignal },
            );
        },
      };
    }
    case 'eventbridge':
      return {
        service: 'EventBridge',
        resource: 'event bus',
        name: target.eventBus,
        async send(abortSignal) {
          const answer = await clients.eventBridge().send(
            new PutEventsCommand({
              Entries: [
                {
                  EventBusName: target.eventBus,
                  Source: target.source,
                  DetailType: delivery.eventType,
                  Detail: awsEnvelope(body, carried),
                  Time: delivery.occurredAt,
                },
              ],
            }),
            { abortSignal },
          );
          const failed = answer.Entries?.find((entry) => entry.ErrorCode !== undefined);
          if ((answer.FailedEntryCount ?? 0) > 0 || failed !== undefined)
            throw new FailedEntryError(failed?.ErrorCode ?? 'InternalFailure', failed?.ErrorMessage ?? '');
        },
      };
    case 'kinesis':
      return {
        service: 'Kinesis',
        resource: 'stream',
        name: target.stream,
        async send(abortSignal) {
          await clients.kinesis().send(
            new PutRecordCommand({
              StreamName: target.stream,
              PartitionKey: keyFromPayload(body, target.partitionKey, delivery.subscriptionId, 'partition'),
              Data: Buffer.from(awsEnvelope(body, carried)),
            }),
            { abortSignal },
          );
        },
      };
    case 's3':
      return {
        service: 'S3',
        resource: 'bucket',
        name: target.bucket,
        async send(abortSignal) {
          await clients.s3().send(
            new PutObjectCommand({
              Bucket: target.bucket,
              Key: objectKey(target.key, { ...delivery, prefix: target.prefix }),
              Body: body,
              ContentType: 'application/json',
              Metadata: carried,
            }),
            { abortSignal },
          );
        },
      };
  }
}
