/**
 * Loads the event catalogue (EVENT_CATALOGUE, YAML or JSON) and checks it whole before a service starts:
 * shape, names, each type's JSON Schema (draft 2020-12, compiled once with Ajv) and examples, within
 * limits that keep a hostile file from making validation a denial of service (docs/event-catalogue.md).
 */
import { readFileSync, statSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import Type, { type Static } from 'typebox';
import { parse as parseYaml } from 'yaml';
import { findInJson, jsonPointerSegment, type JsonProblem } from './json-walk.js';
import {
  createCatalogue,
  operationalKind,
  operationalTypes,
  type Catalogue,
  type EventKindEntry,
} from './catalogue.js';

/** The example catalogue (telephony), relative to the repository root: EVENT_CATALOGUE's default. */
export const exampleCatalogueFile = 'catalogues/telephony.yaml';

/** Largest catalogue file read, in bytes (1 MiB). */
export const maxCatalogueFileBytes = 1024 * 1024;
/** Most event types in one catalogue. */
export const maxCatalogueTypes = 1000;
/** Largest schema of one event type, in bytes of its JSON serialization (64 KiB). */
export const maxSchemaBytes = 64 * 1024;
/** Deepest nesting of objects and arrays in one schema. */
export const maxSchemaDepth = 32;
/** Longest regular expression (`pattern`, a `patternProperties` key) in a schema, in characters. */
export const maxSchemaPatternLength = 256;
/** Most items of a `uniqueItems` array of non-scalar items: Ajv compares every pair (quadratic). */
export const maxUniqueItemsCompared = 100;

/** The JSON Schema types whose `uniqueItems` Ajv checks in linear time, with a hash. */
const scalarTypes = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** Why a node's `uniqueItems` would be an unbounded quadratic check, or null (scalar items, small `maxItems`). */
export function unboundedUniqueItems(node: unknown): string | null {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return null;
  const { uniqueItems, items, maxItems } = node as {
    uniqueItems?: unknown;
    items?: unknown;
    maxItems?: unknown;
  };
  if (uniqueItems !== true) return null;
  const type = items !== null && typeof items === 'object' ? (items as { type?: unknown }).type : undefined;
  const types = Array.isArray(type) ? type : [type];
  if (type !== undefined && types.every((t) => typeof t === 'string' && scalarTypes.has(t))) return null;
  if (typeof maxItems === 'number' && maxItems <= maxUniqueItemsCompared) return null;
  return `uniqueItems over items not all of a scalar type compares every pair: give the array maxItems of at most ${maxUniqueItemsCompared}, or items a scalar type`;
}

/**
 * Ajv's regular expression engine for catalogue schemas: RE2 (re2js), linear in the input, so no
 * pattern backtracks catastrophically; it refuses backreferences and lookarounds.
 * @throws RE2JSSyntaxException for a pattern RE2 cannot compile
 */
export const linearRegExp = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    // Ajv keys its compiled patterns by their string form: each pattern needs its own.
    return { test: (input: string) => compiled.test(input), toString: () => `re2:${pattern}` };
  },
  { code: 'RE2JS.compile' },
);

/** Why RE2 cannot compile `pattern`, or null. */
function nonLinearPattern(pattern: string): string | null {
  try {
    linearRegExp(pattern);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** An event type: `<resource>.<action>`, lowercase words of letters, digits and underscores. */
export const eventTypeName = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
/** A kind: the last segment of its subscription endpoint, `POST /api/webhooks/<kind>`. */
const kindName = /^[a-z][a-z0-9-]{0,63}$/;

const EventTypeDefinition = Type.Object(
  {
    description: Type.String({ minLength: 1, maxLength: 1000 }),
    schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    example: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    deprecated: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const CatalogueDefinition = Type.Object(
  {
    kinds: Type.Record(
      Type.String(),
      Type.Object(
        {
          description: Type.String({ minLength: 1, maxLength: 1000 }),
          types: Type.Record(Type.String(), EventTypeDefinition, { minProperties: 1 }),
        },
        { additionalProperties: false },
      ),
      { minProperties: 1 },
    ),
  },
  { additionalProperties: false },
);
type CatalogueDefinition = Static<typeof CatalogueDefinition>;

/** A catalogue file that cannot be used: the message names the file, the place in it and why. */
export class CatalogueError extends Error {
  constructor(
    readonly file: string,
    readonly pointer: string,
    readonly reason: string,
  ) {
    super(`event catalogue ${file}: ${pointer || '/'}: ${reason}`);
    this.name = 'CatalogueError';
  }
}

/** The first reason `schema` is too costly: depth, a long or non-linear pattern, {@link unboundedUniqueItems}. */
function hostileSchemaPart(schema: unknown, pointer: string): JsonProblem | null {
  const atRoot = unboundedUniqueItems(schema);
  if (atRoot !== null) return { pointer, detail: atRoot };
  return findInJson(
    schema,
    maxSchemaDepth,
    (key, value) => {
      const patterns =
        key === 'pattern' && typeof value === 'string'
          ? [value]
          : key === 'patternProperties' && value !== null && typeof value === 'object'
            ? Object.keys(value)
            : [];
      for (const pattern of patterns) {
        if (pattern.length > maxSchemaPatternLength) {
          return `regular expression longer than ${maxSchemaPatternLength} characters`;
        }
        const nonLinear = nonLinearPattern(pattern);
        if (nonLinear !== null) {
          return `regular expression ${JSON.stringify(pattern)} cannot be matched in linear time (RE2 syntax): ${nonLinear}`;
        }
      }
      return unboundedUniqueItems(value);
    },
    pointer,
  );
}

/**
 * The Ajv instance of catalogue schemas: draft 2020-12, all errors, standard formats, RE2 patterns.
 * Unknown keywords are refused (a misspelt `required` would check nothing); strict types are off.
 */
function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    code: { regExp: linearRegExp },
  });
  addFormats.default(ajv);
  return ajv;
}

/**
 * Checks a parsed catalogue and compiles its schemas; `file` is named in errors.
 * @throws CatalogueError naming the JSON pointer in the file of the first problem found
 */
export function catalogueFromDefinition(file: string, definition: unknown): Catalogue {
  const ajv = createAjv();
  const checkShape = ajv.compile<CatalogueDefinition>(CatalogueDefinition);
  if (!checkShape(definition)) {
    const [error] = checkShape.errors!;
    let pointer = error!.instancePath;
    if (error!.keyword === 'required')
      pointer += `/${jsonPointerSegment(String(error!.params.missingProperty))}`;
    if (error!.keyword === 'additionalProperties') {
      throw new CatalogueError(
        file,
        `${pointer}/${jsonPointerSegment(String(error!.params.additionalProperty))}`,
        'is not a known field',
      );
    }
    throw new CatalogueError(file, pointer, error!.message ?? 'is invalid');
  }
  const kinds: EventKindEntry[] = [];
  const validators = new Map<string, ValidateFunction>();
  const seen = new Map<string, string>();
  for (const [kind, kindDefinition] of Object.entries(definition.kinds)) {
    const kindPointer = `/kinds/${jsonPointerSegment(kind)}`;
    if (kind === operationalKind)
      throw new CatalogueError(file, kindPointer, "the operational kind is the service's own");
    if (!kindName.test(kind)) {
      throw new CatalogueError(
        file,
        kindPointer,
        'a kind is lowercase letters, digits and hyphens, starting with a letter, at most 64 characters',
      );
    }
    const types = [];
    for (const [type, typeDefinition] of Object.entries(kindDefinition.types)) {
      const typePointer = `${kindPointer}/types/${jsonPointerSegment(type)}`;
      if (!eventTypeName.test(type) || type.length > 100) {
        throw new CatalogueError(
          file,
          typePointer,
          'an event type is <resource>.<action>: lowercase words of letters, digits and underscores joined by dots, at most 100 characters',
        );
      }
      if (operationalTypes.includes(type))
        throw new CatalogueError(file, typePointer, `${type} is an operational type, the service's own`);
      if (seen.has(type))
        throw new CatalogueError(file, typePointer, `${type} is declared in kind ${seen.get(type)} too`);
      seen.set(type, kind);
      if (seen.size > maxCatalogueTypes)
        throw new CatalogueError(file, typePointer, `more than ${maxCatalogueTypes} event types`);
      const schema = typeDefinition.schema ?? null;
      if (schema !== null) {
        const schemaPointer = `${typePointer}/schema`;
        if (Buffer.byteLength(JSON.stringify(schema)) > maxSchemaBytes) {
          throw new CatalogueError(file, schemaPointer, `larger than ${maxSchemaBytes} bytes serialized`);
        }
        const hostile = hostileSchemaPart(schema, schemaPointer);
        if (hostile) throw new CatalogueError(file, hostile.pointer, hostile.detail);
        let validate: ValidateFunction;
        try {
          validate = ajv.compile(schema);
        } catch (error) {
          throw new CatalogueError(
            file,
            schemaPointer,
            `is not a usable JSON Schema (draft 2020-12): ${(error as Error).message}`,
          );
        }
        validators.set(type, validate);
        if (typeDefinition.example !== undefined && !validate(typeDefinition.example)) {
          const [first] = validate.errors!;
          throw new CatalogueError(
            file,
            `${typePointer}/example${first!.instancePath}`,
            `does not match the schema: ${first!.message}`,
          );
        }
      }
      types.push({
        type,
        kind,
        description: typeDefinition.description,
        schema,
        example: typeDefinition.example ?? {},
        deprecated: typeDefinition.deprecated ?? false,
      });
    }
    kinds.push({ kind, description: kindDefinition.description, types });
  }
  return createCatalogue(file, kinds, validators);
}

/**
 * Reads, parses and checks the catalogue file at `file` (relative to the working directory).
 * @throws CatalogueError when the file cannot be read, is over {@link maxCatalogueFileBytes}, is not
 *   YAML 1.2 or JSON, or breaks a rule of {@link catalogueFromDefinition}
 */
export function loadCatalogue(file: string): Catalogue {
  let text: string;
  try {
    if (statSync(file).size > maxCatalogueFileBytes) {
      throw new CatalogueError(file, '', `larger than ${maxCatalogueFileBytes} bytes`);
    }
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof CatalogueError) throw error;
    throw new CatalogueError(file, '', `cannot be read: ${(error as Error).message}`);
  }
  // YAML 1.2's core schema only: a `%YAML 1.1` directive would bring back merge keys and the
  // `!!binary`, `!!set` and `!!timestamp` tags, whose values are not JSON.
  if (/^%YAML\b/m.test(text)) {
    throw new CatalogueError(
      file,
      '',
      'has a %YAML directive: the catalogue is read as YAML 1.2, without one',
    );
  }
  let definition: unknown;
  try {
    definition = parseYaml(text, { maxAliasCount: 100, version: '1.2', schema: 'core', merge: false });
  } catch (error) {
    throw new CatalogueError(file, '', `is not valid YAML or JSON: ${(error as Error).message}`);
  }
  return catalogueFromDefinition(file, definition);
}
