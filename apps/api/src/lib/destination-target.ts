/**
 * The `callback_url` a create or update stores, from `callback_url` and `destination`: an HTTP
 * callback passes the SSRF policy; a broker destination names a DESTINATION_BROKERS broker of its
 * type, stored as its URI; a `cli` destination gets a new relay session.
 */
import { v7 as uuidv7 } from 'uuid';
import {
  awsCredentialsProblem,
  checkDestination,
  destinationUrl,
  relayUrl,
  type AwsCredentialsInput,
  type BrokerConfig,
  type DestinationInput,
} from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** The stored target of a write, or undefined when the write leaves it as it is. */
export interface WriteTarget {
  callbackUrl: string;
  /** A broker or `cli` destination: no challenge, no client certificate. */
  broker: boolean;
  /** An AWS destination's customer-owned credentials, checked; absent for the deployment's own. */
  credentials?: AwsCredentialsInput;
}

const refuse = (pointer: string, detail: string) =>
  new HttpProblem(400, 'validation', `${pointer.slice(1).replaceAll('/', '.')} ${detail}`, [
    { pointer, detail },
  ]);

/**
 * The target of a create (`creating`) or update by `accountId`; `checkCallback` is the SSRF check (throws its 400).
 * @throws HttpProblem 400 naming `/callback_url` (missing on create, or beside a broker), `/destination/...`
 *   (unknown broker, wrong type, bad name, bad credentials or none where the broker requires them, `cli` on an update), or `/client_certificate`/`/auth` beside a broker or `cli`
 */
export function writeTarget(
  body: {
    callback_url?: string;
    destination?: DestinationInput;
    client_certificate?: unknown;
    auth?: unknown;
  },
  brokers: ReadonlyMap<string, BrokerConfig>,
  accountId: string,
  checkCallback: (url: string) => void,
  creating: boolean,
): WriteTarget | undefined {
  const { callback_url, destination } = body;
  if (destination === undefined || destination.type === 'http') {
    if (callback_url === undefined) {
      if (creating || destination !== undefined)
        throw refuse('/callback_url', 'is required, unless `destination` names a broker');
      return undefined;
    }
    checkCallback(callback_url);
    return { callbackUrl: callback_url, broker: false };
  }
  if (callback_url !== undefined)
    throw refuse('/callback_url', `must be left out with a ${destination.type} destination`);
  if (body.client_certificate !== undefined && body.client_certificate !== null)
    throw refuse('/client_certificate', 'applies to http destinations only');
  if (body.auth !== undefined && body.auth !== null)
    throw refuse('/auth', 'applies to http destinations only');
  if (destination.type === 'cli') {
    if (!creating) throw refuse('/destination/type', 'can be cli only when the subscription is created');
    return { callbackUrl: relayUrl(uuidv7()), broker: true };
  }
  const checked = checkDestination(destination, brokers, accountId);
  if ('pointer' in checked) throw refuse(checked.pointer, checked.detail);
  const credentials = 'credentials' in destination ? destination.credentials : undefined;
  if (credentials === undefined) return { callbackUrl: destinationUrl(checked.target), broker: true };
  const refused = awsCredentialsProblem(credentials);
  if (refused !== null) throw refuse(refused.pointer, refused.detail);
  return { callbackUrl: destinationUrl(checked.target), broker: true, credentials };
}

/**
 * Whether an update leaves the subscription without HTTP credentials: `auth` and
 * `client_certificate` go to HTTP callbacks only, whether the destination changes in the same body
 * (`target`) or was set before (`currentCallbackUrl`). True when it delivers to a broker or `cli`
 * after the update: any stored ones are cleared, so no `Authorization` header is ever put into a
 * message or the relay.
 * @throws HttpProblem 400 naming `/auth` or `/client_certificate` given for such a destination
 */
export function clearsCredentials(
  body: { client_certificate?: unknown; auth?: unknown },
  target: WriteTarget | undefined,
  currentCallbackUrl: string,
): boolean {
  const http = target === undefined ? /^https?:/i.test(currentCallbackUrl) : !target.broker;
  if (http) return false;
  if (body.client_certificate !== undefined && body.client_certificate !== null)
    throw refuse('/client_certificate', 'applies to http destinations only');
  if (body.auth !== undefined && body.auth !== null)
    throw refuse('/auth', 'applies to http destinations only');
  return true;
}
