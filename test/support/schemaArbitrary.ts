import fc from 'fast-check';

/**
 * fast-check arbitraries drawn from the JSON Schemas of the API description (the request schemas of
 * src/http/validation.ts): `valid` gives values the schema accepts, `mutated` values one step off
 * (a wrong type, a missing required field, an unknown field, a string far too long, odd Unicode).
 * Only the keywords the request schemas use are read: type, const, enum, properties, required,
 * additionalProperties, items, minLength, maxLength, minimum, maximum.
 */

type Schema = {
  type?: string | string[];
  const?: unknown;
  enum?: readonly unknown[];
  properties?: Record<string, Schema>;
  required?: readonly string[];
  items?: Schema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
};

/** Strings a careless server trips on: lone surrogates, NUL, RTL marks, combining runs, emoji, escapes. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('\ud800', '\udfff x', '\u0000', '\u202e\u202d', 'e\u0301\u0301\u0301', '🧠📚', '..', '%2e%2e', '%', '\\', '<script>', '"\'', ' ', ''),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);

/** A string the size of an abuse (over any field's limit, far under the body limits). */
export const hugeString: fc.Arbitrary<string> = fc.integer({ min: 1_000, max: 200_000 }).map((n) => 'x'.repeat(n));

/** Per field name (string fields; `<type>:<name>` for others), a better arbitrary than the schema alone gives (paths that exist, for instance). */
export type FieldHints = Record<string, fc.Arbitrary<unknown>>;

export function valid(schema: Schema, hints: FieldHints = {}, field = ''): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  // A hint is for a string field of that name, or `<type>:<name>` for another type (`integer:version`).
  const hint = field ? (hints[`${type}:${field}`] ?? (type === 'string' ? hints[field] : undefined)) : undefined;
  if (hint) return hint;
  switch (type) {
    case 'string': {
      const min = schema.minLength ?? 0;
      const max = Math.min(schema.maxLength ?? 64, 64);
      return fc.oneof(fc.string({ minLength: min, maxLength: max }), fc.string({ unit: 'grapheme', minLength: min, maxLength: max }));
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: Math.min(schema.maximum ?? 1000, 1000) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(schema.items ? valid(schema.items, hints) : fc.anything(), { maxLength: 4 });
    case 'object': {
      const properties = schema.properties ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, sub] of Object.entries(properties)) model[name] = valid(sub, hints, name);
      return fc.record(model, { requiredKeys: [...(schema.required ?? [])].filter((k) => k in properties) });
    }
    default:
      return fc.jsonValue();
  }
}

/** A value of another JSON type than the schema's. */
const wrongType = (schema: Schema): fc.Arbitrary<unknown> => {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const others: fc.Arbitrary<unknown>[] = [fc.constant(null), fc.boolean(), fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 })];
  if (type !== 'string') others.push(oddString);
  if (type !== 'integer' && type !== 'number') others.push(fc.oneof(fc.integer(), fc.double()));
  return fc.oneof(...others);
};

/** A value one step off the schema (or, for an object, one field off), sometimes still valid by chance. */
export function mutated(schema: Schema, hints: FieldHints = {}): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const names = Object.keys(properties);
  const base = valid(schema, hints) as fc.Arbitrary<Record<string, unknown>>;
  if (schema.type !== 'object' || names.length === 0) {
    return fc.oneof(wrongType(schema), oddString, hugeString, base.map((v) => ({ unexpected: v })));
  }
  return fc.oneof(
    // One field of the wrong type, odd, or huge.
    fc.tuple(base, fc.constantFrom(...names), fc.oneof(...names.map((n) => wrongType(properties[n] as Schema)), oddString, hugeString)).map(([v, name, bad]) => ({ ...v, [name]: bad })),
    // A required field missing.
    ...(schema.required?.length ? [fc.tuple(base, fc.constantFrom(...schema.required)).map(([v, name]) => Object.fromEntries(Object.entries(v).filter(([k]) => k !== name)))] : []),
    // An unknown field, the prototype's names among them.
    // (defineProperty: `__proto__` becomes an own field, sent as such, not the object's prototype.)
    fc.tuple(base, fc.constantFrom('__proto__', 'constructor', 'extra', 'Content'), fc.jsonValue()).map(([v, name, x]) =>
      Object.defineProperty({ ...v }, name, { value: x, enumerable: true, writable: true, configurable: true }),
    ),
    // Not an object at all.
    wrongType(schema),
  );
}
