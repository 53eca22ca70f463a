/** Portal sessions: minting a one-time link, exchanging it for a session, revoking it. */
import Type, { type Static } from 'typebox';

/** Body of `POST /api/portal-sessions`; may be empty. */
export const PortalSessionCreate = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 86_400,
        description:
          'Lifetime of the session once the link is opened, in seconds (60 to 86,400; default 3,600)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PortalSessionCreate = Static<typeof PortalSessionCreate>;

/** Answer of `POST /api/portal-sessions`. */
export const PortalSession = Type.Object({
  id: Type.String({ description: 'The session id: `DELETE /api/portal-sessions/{id}` revokes it' }),
  url: Type.String({
    description:
      'The portal page with a one-time link in its fragment (`/portal/#link=plk_…`), which browsers never send to servers; the page exchanges it once for its session',
  }),
  expires_at: Type.String({
    format: 'date-time',
    description: 'When the link can no longer be opened (PORTAL_LINK_SECONDS after minting)',
  }),
});
export type PortalSession = Static<typeof PortalSession>;

/** Body of `POST /api/portal-sessions/exchange`. */
export const PortalLinkExchange = Type.Object(
  { link: Type.String({ minLength: 1, maxLength: 128, description: 'The `plk_…` link of the fragment' }) },
  { additionalProperties: false },
);
export type PortalLinkExchange = Static<typeof PortalLinkExchange>;

/** Answer of `POST /api/portal-sessions/exchange`: the session's bearer token. */
export const PortalSessionToken = Type.Object({
  token: Type.String({ description: 'A bearer token acting for the account in the portal' }),
  expires_at: Type.String({ format: 'date-time', description: 'When the session ends' }),
});
export type PortalSessionToken = Static<typeof PortalSessionToken>;

/** Path parameters of `DELETE /api/portal-sessions/{id}`. */
export const PortalSessionParams = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The session id that minting returned' }),
});
export type PortalSessionParams = Static<typeof PortalSessionParams>;
