/**
 * Customer-owned credentials of an AWS destination: a role in the customer's AWS account that the
 * service assumes (STS `AssumeRole`) with an external id it generates per subscription, the
 * cross-account pattern AWS documents for third parties ("Access to AWS accounts owned by third
 * parties", IAM User Guide), or access keys as a fallback. Sealed at rest in the subscription's
 * `destination_credentials` ({@link SecretBox}); the secret access key is never shown again.
 */
import { randomBytes } from 'node:crypto';
import type { SecretBox } from './secret-box.js';

/** Credentials as the API takes them, in a destination's `credentials`. */
export type AwsCredentialsInput =
  | { type: 'role'; role_arn: string }
  | { type: 'access_key'; access_key_id: string; secret_access_key: string };

/** Credentials as stored and used. */
export type AwsCredentials =
  | { type: 'role'; roleArn: string; externalId: string }
  | { type: 'access_key'; accessKeyId: string; secretAccessKey: string };

/** Credentials as the API shows them: the external id only in the answer that generated it, never the secret key. */
export type AwsCredentialsView =
  { type: 'role'; role_arn: string; external_id?: string } | { type: 'access_key'; access_key_id: string };

/** `arn:<partition>:iam::<account>:role/<path and name>` (IAM, "IAM identifiers"). */
const roleArn = /^arn:aws(-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;
/** An access key id: 16-128 upper-case letters and digits (IAM `AccessKey`). */
const accessKeyId = /^[A-Z0-9]{16,128}$/;

/** Why `input` cannot be used, naming the field under `/destination/credentials`, or null. */
export function awsCredentialsProblem(
  input: AwsCredentialsInput,
): { pointer: string; detail: string } | null {
  if (input.type === 'role')
    return roleArn.test(input.role_arn)
      ? null
      : {
          pointer: '/destination/credentials/role_arn',
          detail: 'must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)',
        };
  if (!accessKeyId.test(input.access_key_id))
    return {
      pointer: '/destination/credentials/access_key_id',
      detail: 'must be an AWS access key id: 16 to 128 upper-case letters and digits',
    };
  return null;
}

/**
 * The stored credentials of `input`: a role gets a new external id (32 hex digits; AWS allows 2 to
 * 1,224 characters of `[\w+=,.@:/-]`, "sts:ExternalId").
 */
export function awsCredentialsFromInput(input: AwsCredentialsInput): AwsCredentials {
  return input.type === 'role'
    ? { type: 'role', roleArn: input.role_arn, externalId: randomBytes(16).toString('hex') }
    : { type: 'access_key', accessKeyId: input.access_key_id, secretAccessKey: input.secret_access_key };
}

/** `credentials` sealed for `subscriptionId`. @throws the secret box's error */
export function sealAwsCredentials(
  credentials: AwsCredentials,
  subscriptionId: string,
  box: SecretBox,
): string {
  return box.seal(JSON.stringify(credentials), subscriptionId);
}

/** The credentials sealed as `sealed` for `subscriptionId`, or null. @throws the secret box's error */
export function openAwsCredentials(
  sealed: string | null,
  subscriptionId: string,
  box: Pick<SecretBox, 'open'>,
): AwsCredentials | null {
  return sealed === null ? null : (JSON.parse(box.open(sealed, subscriptionId)) as AwsCredentials);
}

/** How the API shows `credentials`; `showExternalId` in the answer of the write that generated it only. */
export function awsCredentialsView(credentials: AwsCredentials, showExternalId: boolean): AwsCredentialsView {
  if (credentials.type === 'access_key')
    return { type: 'access_key', access_key_id: credentials.accessKeyId };
  return {
    type: 'role',
    role_arn: credentials.roleArn,
    ...(showExternalId ? { external_id: credentials.externalId } : {}),
  };
}
