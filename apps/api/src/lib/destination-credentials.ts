/**
 * An AWS destination's customer-owned credentials on a write: sealed for the subscription's
 * `destination_credentials` column (a role gets a new external id), and shown in that write's answer
 * with the external id, the only answer that shows it (`aws-credentials.ts` in @webhooks/shared).
 */
import {
  awsCredentialsFromInput,
  awsCredentialsView,
  sealAwsCredentials,
  type AwsCredentials,
  type SecretBox,
  type Subscription,
} from '@webhooks/shared';
import type { WriteTarget } from './destination-target.js';

/** What a write stores: the sealed column (undefined: unchanged, null: none) and the credentials it made. */
export interface StoredCredentials {
  sealed: string | null | undefined;
  made: AwsCredentials | null;
}

/**
 * The credentials a write of `target` stores for subscription `id`: a new destination replaces them
 * (none given: none kept), no destination in the write keeps them.
 * @throws the secret box's error
 */
export function destinationCredentials(
  target: WriteTarget | undefined,
  id: string,
  box: SecretBox,
): StoredCredentials {
  if (target === undefined) return { sealed: undefined, made: null };
  if (target.credentials === undefined) return { sealed: null, made: null };
  const made = awsCredentialsFromInput(target.credentials);
  return { sealed: sealAwsCredentials(made, id, box), made };
}

/** `view` with the credentials the write `made` shown, external id included. */
export function withMadeCredentials<T extends Pick<Subscription, 'destination'>>(
  view: T,
  made: AwsCredentials | null,
): T {
  if (made === null) return view;
  const destination = { ...(view.destination as object), credentials: awsCredentialsView(made, true) };
  return { ...view, destination: destination as Subscription['destination'] };
}
