/**
 * The OpenAPI 3.1 document (/docs/json) and Swagger UI (/docs) from the route schemas; `packages/client`
 * is generated from it, Redocly lints it. API_DOCS=false serves neither.
 */
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

/** Options of the OpenAPI plugin. */
export interface SwaggerOptions {
  /** The `servers` entry: where clients reach this API (config.ts, apiServerUrl). */
  serverUrl: string;
  /** API_DOCS: serve the document and Swagger UI; when false they are not routes at all (404). */
  serve: boolean;
}

export default fp<SwaggerOptions>(
  async (app, options) => {
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
            name: 'portal',
            description: 'Links to the subscriber portal, minted by a platform for its logged-in customer',
          },
          {
            name: 'events',
            description: 'The event catalogue, and publishing events as a client application',
          },
        ],
        servers: [{ url: options.serverUrl, description: 'This installation' }],
        components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
        security: [{ bearer: [] }],
      },
      // Shared schemas keep their $id as component name (`Problem`), which generated clients name types after.
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    });
    if (!options.serve) return;
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      // Its own policy, without upgrade-insecure-requests, which would break an API served over plain HTTP.
      staticCSP: true,
      transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
    });
  },
  { name: 'swagger' },
);
