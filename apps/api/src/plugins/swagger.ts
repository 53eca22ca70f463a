/** The OpenAPI 3.1 document at /docs/json and Swagger UI at /docs, built from the route schemas. */
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

export default fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Webhook subscriptions',
          license: { name: 'MIT', identifier: 'MIT' },
          version: '1.0.0',
          description:
            'Register callback URLs for events and read their delivery log. Deliveries are signed per Standard Webhooks.',
        },
        tags: [
          {
            name: 'subscriptions',
            description:
              'Callback URLs registered for every event type or for one kind, with their signing secrets and throttling',
          },
          {
            name: 'deliveries',
            description:
              'The delivery log: every attempt of every event sent to a subscription, retry and recovery',
          },
          {
            name: 'events',
            description: 'The event catalogue, and publishing events as a client application',
          },
        ],
        components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
        security: [{ bearer: [] }],
      },
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'swagger' },
);
