import Fastify from 'fastify';
import { createWebhookClient, verifyWebhook } from '@webhooks/client';

const api = createWebhookClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.WEBHOOKS_TOKEN ?? '' });
const created = await api.POST('/api/webhooks', { body: { callback_url: 'http://127.0.0.1:4000/hooks' } });
if (created.error) throw new Error(created.error.detail); // RFC 9457 problem details, `errors` names each field
const { id, secret } = created.data;
const failed = await api.GET('/api/webhooks/{id}/deliveries', { params: { path: { id }, query: { status: 'failed' } } });
const [first] = failed.data?.results ?? [];
if (first) await api.POST('/api/webhooks/{id}/deliveries/{delivery_id}/retry', { params: { path: { id, delivery_id: first.id } } });

const receiver = Fastify({ logger: true });
receiver.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
receiver.post('/hooks', async (request) => {
  const event = verifyWebhook(secret, request.body as string, request.headers); // throws unless signed with `secret`
  request.log.info({ type: event.type, data: event.data }, 'verified delivery');
  return 'ok'; // 200 confirms; any other answer is retried
});
await receiver.listen({ port: 4000 });
