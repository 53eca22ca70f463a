/**
 * The signing secret of a subscription: read it (`GET /api/webhooks/{id}/secret`) or replace it
 * (`POST /api/webhooks/{id}/secret/rotate`). After a rotation the old secret keeps signing beside
 * the new one for 24 hours (both signatures sent), so receivers can switch without losing events.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { generateSigningSecret, secretRotationOverlapMs, SigningSecret } from '@webhooks/shared';
import type { Subscription as SubscriptionRow } from '@webhooks/db';
import { problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';

function toSecret(row: Pick<SubscriptionRow, 'secret' | 'previousSecretExpiresAt'>): SigningSecret {
  const expires = row.previousSecretExpiresAt;
  return {
    secret: row.secret,
    previous_secret_expires_at: expires && expires > new Date() ? expires.toISOString() : null,
  };
}

const signingSecret: FastifyPluginAsyncTypebox = async (app) => {
  const schema = (summary: string) => ({
    tags: ['subscriptions'] as string[],
    summary,
    params: SubscriptionParams,
    response: { 200: SigningSecret, ...problemResponses },
  });

  app.get(
    '/api/webhooks/:id/secret',
    { schema: schema('The signing secret of the deliveries') },
    async (request) => toSecret(await findOwnSubscription(app.prisma, request.accountId, request.params.id)),
  );

  app.post(
    '/api/webhooks/:id/secret/rotate',
    { schema: schema('Replace the signing secret; the old one keeps signing for 24 hours') },
    async (request) => {
      const current = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const row = await app.prisma.subscription.update({
        where: { id: current.id },
        data: {
          secret: generateSigningSecret(),
          previousSecret: current.secret,
          previousSecretExpiresAt: new Date(Date.now() + secretRotationOverlapMs),
        },
      });
      return toSecret(row);
    },
  );
};

export default signingSecret;
