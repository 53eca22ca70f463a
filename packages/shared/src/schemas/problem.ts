/** RFC 9457 problem details, the body of every 4xx and 5xx answer (`application/problem+json`). */
import Type, { type Static } from 'typebox';

/** One invalid field of a request. */
export const ProblemFieldError = Type.Object({
  pointer: Type.String({ description: 'JSON pointer (RFC 6901) of the field, e.g. /callback_url' }),
  detail: Type.String({ description: 'What is wrong with it' }),
});

/** Problem details object, RFC 9457 section 3, with the `errors` extension listing invalid fields. */
export const Problem = Type.Object(
  {
    type: Type.String({ description: 'URI reference identifying the problem type' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(ProblemFieldError)),
  },
  { $id: 'Problem' },
);
export type Problem = Static<typeof Problem>;
