/**
 * The SDK clients of one AWS identity: the deployment's own (the SDK's default chain), or a
 * subscription's customer-owned credentials, a role assumed with its external id
 * (`fromTemporaryCredentials`, STS AssumeRole) or access keys. Each client is made at its first use;
 * the client caches an assumed role's credentials until shortly before they expire, one refresh
 * shared by every attempt waiting for it (the SDK's memoized identity provider).
 */
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SNSClient } from '@aws-sdk/client-sns';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { AwsCredentials } from '@webhooks/shared';
import type { AwsClients } from './aws-writes.js';
import { awsErrorName } from './aws-errors.js';

/** How long a queue's URL is used without asking again, in ms. */
const knownQueueMs = 60_000;

/** Queue URLs kept at most per identity; the oldest goes first (a miss costs one GetQueueUrl). */
const maxKnownQueues = 1_000;

/** How long an assumed role's credentials last, in s (AssumeRole's default; the role's maximum may be more). */
const roleSessionSeconds = 3_600;

/** What every client of one `aws` broker entry is made with. */
export interface AwsClientSettings {
  region: string;
  /** The entry's `endpoint`; '' for the SDK's own per service and region. */
  endpoint: string;
  /** DELIVERY_TIMEOUT_MS, in ms. */
  timeoutMs: number;
}

/** Assuming a subscription's role failed: the write never started. */
export class RoleAssumptionError extends Error {
  /** The AWS error name of STS's answer (`AccessDenied` for a trust policy that refuses), or ''. */
  readonly code: string;
  constructor(
    readonly roleArn: string,
    cause: unknown,
  ) {
    super(`assuming ${roleArn} failed: ${String((cause as Error)?.message ?? cause)}`, { cause });
    this.name = 'RoleAssumptionError';
    this.code = awsErrorName(cause);
  }
}

/** The clients of one identity, and how to let them go. */
export type AwsClientSet = AwsClients & { destroy(): void };

/**
 * The clients of `credentials` (null: the deployment's own) for subscription `subscriptionId`.
 * A role's session is named `webhooks-<subscription id>`, so the customer's CloudTrail names it.
 */
export function createAwsClients(
  settings: AwsClientSettings,
  credentials: AwsCredentials | null,
  subscriptionId: string,
): AwsClientSet {
  const { region, endpoint, timeoutMs } = settings;
  // The attempt is ours to retry, with the delivery's backoff: the SDK tries once.
  const common = { region, ...(endpoint === '' ? {} : { endpoint }), maxAttempts: 1 };
  const base = {
    ...common,
    requestHandler: { requestTimeout: timeoutMs },
    ...(credentials === null ? {} : { credentials: identityOf(credentials, subscriptionId, common) }),
  };
  const made = new Map<string, { destroy(): void }>();
  const client =
    <C extends { destroy(): void }>(name: string, make: () => C) =>
    (): C => {
      let found = made.get(name) as C | undefined;
      if (found === undefined) {
        found = make();
        made.set(name, found);
      }
      return found;
    };
  const queues = new Map<string, { url: string; until: number }>();
  const clients: AwsClientSet = {
    sqs: client('sqs', () => new SQSClient(base)),
    sns: client('sns', () => new SNSClient(base)),
    eventBridge: client('eventbridge', () => new EventBridgeClient(base)),
    // Its default handler speaks HTTP/2 (for SubscribeToShard), which an http:// endpoint does not;
    // PutRecord needs none of it.
    kinesis: client(
      'kinesis',
      () =>
        new KinesisClient({ ...base, requestHandler: new NodeHttpHandler({ requestTimeout: timeoutMs }) }),
    ),
    // An endpoint of the operator's (a local S3, moto) is addressed by path, not by a bucket's host name.
    s3: client('s3', () => new S3Client({ ...base, forcePathStyle: endpoint !== '' })),
    async queueUrl(name, abortSignal) {
      const known = queues.get(name);
      if (known !== undefined && known.until > Date.now()) return known.url;
      const answer = await clients.sqs().send(new GetQueueUrlCommand({ QueueName: name }), { abortSignal });
      const found = answer.QueueUrl ?? '';
      queues.delete(name);
      queues.set(name, { url: found, until: Date.now() + knownQueueMs });
      if (queues.size > maxKnownQueues) queues.delete(queues.keys().next().value!);
      return found;
    },
    forgetQueue: (name) => queues.delete(name),
    destroy() {
      for (const opened of made.values()) opened.destroy();
    },
  };
  return clients;
}

/** The SDK identity of customer-owned `credentials`; a role's failures as {@link RoleAssumptionError}. */
function identityOf(
  credentials: AwsCredentials,
  subscriptionId: string,
  stsConfig: { region: string; endpoint?: string; maxAttempts: number },
) {
  if (credentials.type === 'access_key')
    return { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey };
  const assume = fromTemporaryCredentials({
    params: {
      RoleArn: credentials.roleArn,
      ExternalId: credentials.externalId,
      RoleSessionName: `webhooks-${subscriptionId}`,
      DurationSeconds: roleSessionSeconds,
    },
    clientConfig: stsConfig,
  });
  return async () => {
    try {
      return await assume();
    } catch (error) {
      throw new RoleAssumptionError(credentials.roleArn, error);
    }
  };
}
