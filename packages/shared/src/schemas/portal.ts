/** Portal sessions (issue #13): `POST /api/portal-sessions` and its answer. */
import Type, { type Static } from 'typebox';

/** Body of `POST /api/portal-sessions`; may be empty. */
export const PortalSessionCreate = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 86_400,
        description: 'Lifetime of the link, in seconds (60 to 86,400; default 3,600)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PortalSessionCreate = Static<typeof PortalSessionCreate>;

/** Answer of `POST /api/portal-sessions`. */
export const PortalSession = Type.Object({
  url: Type.String({
    description:
      'The portal page with the session token in its fragment (`/portal/#token=…`), which browsers never send to servers',
  }),
  expires_at: Type.String({ format: 'date-time', description: 'When the link stops working' }),
});
export type PortalSession = Static<typeof PortalSession>;
