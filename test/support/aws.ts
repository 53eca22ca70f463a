/**
 * What the AWS destination tests share: reading an SQS queue as a consumer does, the first attempt of
 * a subscription's delivery, and a proxy in front of moto that lets a test answer for AWS (a throttle,
 * a refused AssumeRole, a lost answer) or look at a request before moto gets it.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { TestStack } from './stack.js';
import { waitFor } from '../../scripts/lib/wait.js';

/** The first `count` messages of queue `url`, with their attributes, each deleted once read (a FIFO group gives the next only then). */
export async function receiveMessages(sqs: SQSClient, url: string, count: number): Promise<Message[]> {
  const messages: Message[] = [];
  await waitFor(`${count} messages`, async () => {
    const answer = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    for (const message of answer.Messages ?? []) {
      messages.push(message);
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle! }));
    }
    return messages.length >= count;
  });
  return messages;
}

/** The `call.completed` delivery of `subscriptionId` once it has an attempt, with its attempts. */
export function deliveryAttempted(stack: TestStack, subscriptionId: string) {
  return waitFor('an attempt', async () => {
    const row = await stack.worker.prisma.delivery.findFirst({
      where: { subscriptionId, event: { type: 'call.completed' } },
      include: { attempts: { orderBy: { attemptNumber: 'asc' } } },
    });
    return row !== null && row.attempts.length > 0 && row;
  });
}

/**
 * What a proxy does with a request, its body read: `forward` passes it to moto, and `lose` (when
 * given) answers instead, after moto has answered, as a connection lost after the write would.
 */
export type ProxyDecision =
  | { kind: 'forward'; lose?: (response: ServerResponse) => void }
  | { kind: 'answer'; status: number; contentType: string; body: string };

/** A running proxy. */
export interface AwsProxy {
  url: string;
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 in front of `upstream()` (moto's URL), asking `decide` per request. */
export async function startAwsProxy(
  upstream: () => string,
  decide: (request: IncomingMessage, body: Buffer) => ProxyDecision,
): Promise<AwsProxy> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const decision = decide(request, body);
      if (decision.kind === 'answer') {
        response.writeHead(decision.status, { 'content-type': decision.contentType });
        response.end(decision.body);
        return;
      }
      const to = new URL(upstream());
      const forwarded = httpRequest(
        {
          host: to.hostname,
          port: to.port,
          method: request.method,
          path: request.url,
          headers: request.headers,
        },
        (answer) => {
          if (decision.lose !== undefined) {
            answer.resume();
            decision.lose(response);
            return;
          }
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
