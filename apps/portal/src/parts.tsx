/** Small pieces every page uses: loading and failure messages, status badges and times. */
import type { ComponentChildren } from 'preact';
import type { Subscription } from '@webhooks/client';

/** A message that something is loading, announced to screen readers. */
export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-busy="true" role="status">
      Loading {what}…
    </p>
  );
}

/** What went wrong and what to do next, announced at once. */
export function Failure({
  title = 'Something went wrong',
  children,
}: {
  title?: string;
  children: ComponentChildren;
}) {
  return (
    <section class="failure" role="alert">
      <h2>{title}</h2>
      <p>{children}</p>
    </section>
  );
}

/** A status (`active`, `failed`…) as a coloured badge with its word, never colour alone. */
export function Badge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

/** An ISO 8601 time in the reader's locale, machine-readable in `datetime`. */
export function Time({ iso }: { iso: string }) {
  return <time dateTime={iso}>{new Date(iso).toLocaleString()}</time>;
}

/** JSON, indented, in a scrollable block labelled for screen readers. */
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

/**
 * An inline confirmation of a destructive action: the `question` (which says what happens), a
 * button doing it and one keeping things as they are.
 */
export function Confirm({
  id,
  question,
  confirm,
  keep,
  onConfirm,
  onKeep,
}: {
  id: string;
  question: string;
  confirm: string;
  keep: string;
  onConfirm: () => void;
  onKeep: () => void;
}) {
  return (
    <div class="confirm" role="group" aria-labelledby={id}>
      <p id={id}>{question}</p>
      <div class="actions">
        <button class="danger" type="button" onClick={onConfirm}>
          {confirm}
        </button>
        <button type="button" onClick={onKeep}>
          {keep}
        </button>
      </div>
    </div>
  );
}

/** A broker destination in words, for the account that reads it. */
export function describeDestination(destination: Subscription['destination']): string {
  switch (destination.type) {
    case 'rabbitmq':
      return `RabbitMQ ${destination.broker}: exchange "${destination.exchange}", routing key "${destination.routing_key}"`;
    case 'nats':
      return `NATS ${destination.broker}: JetStream subject ${destination.subject}`;
    case 'sqs':
      return `Amazon SQS ${destination.broker}: queue ${destination.queue}`;
    case 'sns':
      return `Amazon SNS ${destination.broker}: topic ${destination.topic_arn}`;
    case 'eventbridge':
      return `Amazon EventBridge ${destination.broker}: bus ${destination.event_bus}, source ${destination.source ?? 'webhooks'}`;
    case 'kinesis':
      return `Amazon Kinesis ${destination.broker}: stream ${destination.stream}`;
    case 's3':
      return `Amazon S3 ${destination.broker}: bucket ${destination.bucket}${destination.prefix ? `, prefix ${destination.prefix}` : ''}`;
    case 'cli':
      return 'relayed to webhooks listen';
    default:
      return 'HTTP callback';
  }
}
