/**
 * A subscription's signing secret: `GET /api/webhooks/{id}/secret` reads it (for Ed25519 `v1a`, the
 * `whpk_` public key); `POST .../secret/rotate` replaces it, the old one signing beside it for 24 hours.
 * Sealed at rest ({@link SecretBox}), answered with `Cache-Control: no-store`; a rotation is one UPDATE.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import {
  generateSigningSecret,
  schemeOfSecret,
  secretRotationOverlapMs,
  SigningSecret,
  verificationKey,
  type SecretBox,
} from '@webhooks/shared';
import { noStore } from '../lib/headers.js';
import { problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription, rotateOwnSigningSecret } from '../lib/subscription-lookup.js';

const signingSecret: FastifyPluginAsyncTypebox<{ secretBox: SecretBox }> = async (app, { secretBox }) => {
  const schema = (operationId: string, summary: string) => ({
    tags: ['subscriptions'] as string[],
    operationId,
    summary,
    params: SubscriptionParams,
    response: { 200: SigningSecret, ...problemResponses },
  });
  const view = (id: string, secret: string, previousExpiresAt: Date | null): SigningSecret => ({
    secret: verificationKey(secretBox.open(secret, id)),
    previous_secret_expires_at:
      previousExpiresAt && previousExpiresAt > new Date() ? previousExpiresAt.toISOString() : null,
  });

  app.get(
    '/api/webhooks/:id/secret',
    { schema: schema('getSigningSecret', 'The signing secret of the deliveries') },
    async (request, reply) => {
      const row = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      return reply.headers(noStore).send(view(row.id, row.secret, row.previousSecretExpiresAt));
    },
  );

  app.post(
    '/api/webhooks/:id/secret/rotate',
    {
      schema: schema(
        'rotateSigningSecret',
        'Replace the signing secret; the old one keeps signing for 24 hours',
      ),
    },
    async (request, reply) => {
      // A new key of the subscription's own scheme: an Ed25519 subscription stays one.
      const current = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const scheme = schemeOfSecret(secretBox.open(current.secret, current.id));
      const row = await rotateOwnSigningSecret(
        app.prisma,
        request.accountId,
        request.params.id,
        secretBox.seal(generateSigningSecret(scheme), request.params.id),
        new Date(Date.now() + secretRotationOverlapMs),
      );
      return reply.headers(noStore).send(view(request.params.id, row.secret, row.previous_secret_expires_at));
    },
  );
};

export default fp(signingSecret, { name: 'signing-secret-routes', encapsulate: true });
