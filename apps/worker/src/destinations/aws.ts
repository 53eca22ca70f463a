/**
 * The publisher of an `aws` broker entry: one write per attempt to SQS, SNS, EventBridge, Kinesis or
 * S3 (`aws-writes.ts`), delivered once the service accepts it; its failures named by `aws-errors.ts`.
 * It writes as the deployment (the SDK's default chain: environment, web identity, instance or task
 * role) or, for a subscription naming customer-owned credentials, as the customer (`aws-clients.ts`).
 */
import { isAwsType, type AwsTarget, type BrokerTarget } from '@webhooks/shared';
import { publishClock, publishWithin, type BrokerPublisher, type PublisherOptions } from './publisher.js';
import { awsErrorName, awsFailure } from './aws-errors.js';
import { awsWrite } from './aws-writes.js';
import { createAwsClients, RoleAssumptionError, type AwsClientSet } from './aws-clients.js';
import type { DeliveryRef } from '../delivery/attempt.js';

/**
 * Subscriptions whose own clients are kept at most, across accounts; the least recently used goes
 * first (a miss costs new connections and, for a role, one AssumeRole).
 */
export const maxCustomerClientSets = 256;

/** Creates the publisher of an `aws` broker in `region`, at endpoint `url` when set (else the SDK's own). */
export function createAwsPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  const region = options.region ?? 'us-east-1';
  const settings = { region, endpoint: url, timeoutMs };
  const deployment = createAwsClients(settings, null, '');
  const customers = new Map<string, { key: string; clients: AwsClientSet }>();
  // A client let go may still carry an attempt: it is destroyed once that attempt has ended.
  const letGo = (clients: AwsClientSet) => setTimeout(() => clients.destroy(), timeoutMs + 1_000).unref();

  const clientsOf = (delivery: DeliveryRef): AwsClientSet => {
    const credentials = delivery.awsCredentials ?? null;
    if (credentials === null) return deployment;
    const key = JSON.stringify(credentials);
    const known = customers.get(delivery.subscriptionId);
    customers.delete(delivery.subscriptionId);
    if (known !== undefined && known.key === key) {
      customers.set(delivery.subscriptionId, known);
      return known.clients;
    }
    if (known !== undefined) letGo(known.clients);
    const clients = createAwsClients(settings, credentials, delivery.subscriptionId);
    customers.set(delivery.subscriptionId, { key, clients });
    if (customers.size > maxCustomerClientSets) {
      const [oldest, { clients: evicted }] = customers.entries().next().value!;
      customers.delete(oldest);
      letGo(evicted);
    }
    return clients;
  };
  const session = { get: () => Promise.resolve(null) };

  return {
    async publish(target: BrokerTarget, body, headers, delivery) {
      const clock = publishClock();
      if (!isAwsType(target.type)) return clock.failed('other', 'not an aws destination');
      const clients = clientsOf(delivery);
      const write = awsWrite(target as AwsTarget, body, headers, delivery, clients);
      if ('refused' in write) return clock.failed('broker_refused', write.refused);
      const controller = new AbortController();
      const result = await publishWithin(
        session,
        timeoutMs,
        clock,
        `${write.service} did not accept the write in time`,
        async () => {
          try {
            await write.send(controller.signal);
            return clock.confirmed();
          } catch (error) {
            if (target.type === 'sqs') clients.forgetQueue(target.queue);
            log.debug({ err: error, service: write.service, name: write.name }, 'aws write failed');
            const failed =
              error instanceof RoleAssumptionError
                ? roleFailure(error)
                : awsFailure(awsErrorName(error), { ...write, region });
            return clock.failed(failed.errorClass, failed.message, error);
          }
        },
      );
      // An attempt past its deadline stops its request.
      controller.abort();
      return result;
    },
    close: async () => {
      deployment.destroy();
      for (const { clients } of customers.values()) clients.destroy();
      customers.clear();
    },
  };
}

/** The failed attempt of a role that could not be assumed. */
function roleFailure(error: RoleAssumptionError) {
  const sts = awsFailure(error.code, { service: 'STS', resource: 'role', name: error.roleArn, region: '' });
  if (sts.errorClass !== 'broker_refused') return sts;
  return {
    errorClass: sts.errorClass,
    message: `STS refused to assume role "${error.roleArn}" (${error.code}): its trust policy must allow this service with the subscription's external id`,
  };
}
