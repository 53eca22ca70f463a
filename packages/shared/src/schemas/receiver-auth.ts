/** Wire schemas of a subscription's `auth`: how the service authenticates to its receiver. */
import Type, { type Static } from 'typebox';
import { maskedHeaderValue } from '../custom-headers.js';

const Basic = Type.Object(
  {
    type: Type.Literal('basic'),
    username: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[^:\\u0000-\\u001f\\u007f]+$',
      description: 'HTTP Basic user id: no colon or control characters (RFC 7617 section 2)',
    }),
    password: Type.String({
      maxLength: 255,
      pattern: '^[^\\u0000-\\u001f\\u007f]*$',
      description: 'Its password; never shown again',
    }),
  },
  { additionalProperties: false, description: 'HTTP Basic authentication (RFC 7617) on every delivery' },
);

const OAuth2ClientCredentials = Type.Object(
  {
    type: Type.Literal('oauth2_client_credentials'),
    token_url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        "The authorization server's token endpoint: an absolute http(s) URL, under the same rules as a callback URL",
    }),
    client_id: Type.String({ minLength: 1, maxLength: 255 }),
    client_secret: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'Sent with HTTP Basic client authentication (RFC 6749 section 2.3.1); never shown again',
    }),
    scope: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    audience: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'Sent as `audience`, for servers that ask for it',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'An OAuth 2.0 access token of the client credentials grant (RFC 6749 section 4.4) as `Authorization: Bearer`: fetched by the worker, kept until shortly before it expires, fetched again once when the receiver answers 401',
  },
);

/** The `auth` of a create or an update; null removes it. */
export const ReceiverAuthInput = Type.Union([Basic, OAuth2ClientCredentials], {
  description:
    'How the service authenticates to the callback beside the signature; sent with `Authorization`, after the custom headers',
});
export type ReceiverAuthInput = Static<typeof ReceiverAuthInput>;

/** `auth` as the API shows it, its secret masked. */
export const ReceiverAuthView = Type.Union([
  Type.Object({
    type: Type.Literal('basic'),
    username: Type.String(),
    password: Type.Literal(maskedHeaderValue),
  }),
  Type.Object({
    type: Type.Literal('oauth2_client_credentials'),
    token_url: Type.String(),
    client_id: Type.String(),
    client_secret: Type.Literal(maskedHeaderValue),
    scope: Type.Union([Type.String(), Type.Null()]),
    audience: Type.Union([Type.String(), Type.Null()]),
  }),
]);
export type ReceiverAuthView = Static<typeof ReceiverAuthView>;
