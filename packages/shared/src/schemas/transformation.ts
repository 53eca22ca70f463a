/** Wire schemas of transformations: the `transformation` field and `POST .../transformation-tests`. */
import Type, { type Static } from 'typebox';
import { maxTransformationBytes } from '../transformation.js';

/** A subscription's `transformation`, on create and update. */
export const TransformationField = Type.Union(
  [
    Type.String({
      minLength: 1,
      maxLength: maxTransformationBytes,
      description: `JavaScript run on each webhook before it is sent, in a sandbox (QuickJS): \`function handler(webhook) { …; return webhook; }\` receives \`{payload, headers, url, event_type}\` and returns it changed (the body is the returned \`payload\`, signed as sent), or sets \`webhook.cancel = true\` to send nothing. At most ${maxTransformationBytes} bytes; each run has a CPU time and a memory budget (TRANSFORMATION_TIMEOUT_MS, TRANSFORMATION_MEMORY_MB). A run that throws, runs out or returns another shape fails the attempt (\`transformation_failed\`). Refused when the deployment sets TRANSFORMATIONS=false`,
      examples: [
        'function handler(webhook) {\n  webhook.payload = { text: `${webhook.event_type}: ${JSON.stringify(webhook.payload.data)}` };\n  return webhook;\n}',
      ],
    }),
    Type.Null(),
  ],
  { description: 'null: none' },
);

/** Body of `POST /api/webhooks/{id}/transformation-tests`. */
export const TransformationTestCreate = Type.Object(
  {
    payload: Type.Object(
      {
        type: Type.String({ description: 'Event type of the sample' }),
        timestamp: Type.Optional(Type.String()),
        webhook_id: Type.Optional(Type.String()),
        data: Type.Record(Type.String(), Type.Unknown(), { maxProperties: 1000 }),
      },
      {
        additionalProperties: false,
        description: 'A payload as the callback would receive it without the transformation',
        examples: [{ type: 'call.completed', data: { direction: 'inbound', duration_seconds: 184 } }],
      },
    ),
    transformation: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: maxTransformationBytes,
        description: "A candidate to try before saving it; the subscription's own when left out",
      }),
    ),
  },
  { additionalProperties: false },
);
export type TransformationTestCreate = Static<typeof TransformationTestCreate>;

/** Answer of `POST /api/webhooks/{id}/transformation-tests`. */
export const TransformationTestResult = Type.Object({
  result: Type.Union([Type.Literal('transformed'), Type.Literal('cancelled'), Type.Literal('failed')], {
    description:
      '`transformed`: what would be sent; `cancelled`: the function cancels this delivery; `failed`: the attempt would fail with `error`',
  }),
  payload: Type.Optional(Type.Unknown({ description: 'The body that would be sent' })),
  headers: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Its custom headers' })),
  url: Type.Optional(Type.String({ description: 'Where it would be sent' })),
  error: Type.Optional(Type.String({ description: 'Why the run failed' })),
});
export type TransformationTestResult = Static<typeof TransformationTestResult>;
