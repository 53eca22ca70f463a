/**
 * Request validation with Ajv from the routes' TypeBox schemas. Fastify's default Ajv strips unknown
 * properties and coerces types; bodies get a strict Ajv (unknown fields and wrong types: 400), query
 * strings, which are text, a coercing one ("2" to 2).
 */
import fp from 'fastify-plugin';
import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';

function ajv(options: Options): Ajv {
  const instance = new Ajv({
    allErrors: true,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    ...options,
  });
  addFormats.default(instance);
  return instance;
}

export default fp(
  async (app) => {
    const strict = ajv({ coerceTypes: false });
    const coercing = ajv({ coerceTypes: 'array' });
    app.setValidatorCompiler(({ schema, httpPart }) =>
      (httpPart === 'body' ? strict : coercing).compile(schema),
    );
  },
  { name: 'validation' },
);
