/** A tagged union's validation errors narrowed to the branch the client named, from Ajv's own errors. */
import { describe, expect, it } from '@jest/globals';
import { Ajv } from 'ajv';
import Type from 'typebox';
import { Destination } from '@webhooks/shared';
import { narrowUnionErrors, type AjvError } from '../src/lib/union-errors.js';

const validate = new Ajv({ allErrors: true, strict: false }).compile(
  Type.Object(
    { destination: Destination, name: Type.Optional(Type.String()) },
    { additionalProperties: false },
  ),
);

/** The narrowed errors of `body`, as pointer and keyword. */
function errorsOf(body: unknown) {
  expect(validate(body)).toBe(false);
  return narrowUnionErrors(validate.errors as AjvError[]).map((e) => [e.instancePath, e.keyword, e.message]);
}

describe('the errors of a destination', () => {
  it('are those of the type it names, alone', () => {
    expect(errorsOf({ destination: { type: 's3', broker: 'aws', bucket: 'ab' } })).toEqual([
      ['/destination/bucket', 'minLength', 'must NOT have fewer than 3 characters'],
    ]);
    expect(errorsOf({ destination: { type: 'sqs', broker: 'aws' } })).toEqual([
      ['/destination', 'required', "must have required property 'queue'"],
    ]);
  });

  it('name the types allowed when the type is none of them, or say it is required', () => {
    const [[pointer, keyword, message]] = errorsOf({ destination: { type: 'kafka' } }) as [string[]];
    expect([pointer, keyword]).toEqual(['/destination/type', 'enum']);
    expect(message).toMatch(/^must be one of http, cli, rabbitmq, nats, sqs, sns, eventbridge, kinesis, s3$/);
    expect(errorsOf({ destination: {} })).toEqual([['/destination', 'required', expect.any(String)]]);
  });

  it('leave the errors outside the union as they are', () => {
    expect(errorsOf({ destination: { type: 'http' }, name: 1 })).toEqual([
      ['/name', 'type', 'must be string'],
    ]);
  });
});
