/**
 * A Lua script with named KEYS and ARGV: the body reads `K.<name>`, `A.<name>`, `R` (the rest) and
 * `now` (ms on Redis' clock) when asked; callers pass objects, so no argument goes out of order.
 * Registered with ioredis' `defineCommand`, run by EVALSHA (Redis docs, "Scripting with Lua").
 */
import type { RedisConnection } from '@webhooks/publisher';

/** Lua: `now`, the time in ms on Redis' clock (TIME's seconds and microseconds). */
export const redisNowLua = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** A script's definition: its command name (unique on a connection), its keys' and arguments' names, in order. */
export interface ScriptSpec<K extends string, A extends string> {
  name: string;
  keys: readonly K[];
  args: readonly A[];
  /** Defines `now` ({@link redisNowLua}) before the body. */
  clock?: boolean;
  /** Takes any number of values after the named arguments, as the Lua list `R`. */
  rest?: boolean;
  lua: string;
}

/** A defined script, called with keys and arguments by name (and `rest`'s values). @throws ioredis' and the script's errors */
export type RedisScript<K extends string, A extends string, R> = (
  keys: Record<K, string>,
  args: Record<A, string | number>,
  rest?: ReadonlyArray<string | number>,
) => Promise<R>;

/** The Lua a spec runs: the names bound, the clock if asked, then its body. */
export function scriptSource(spec: ScriptSpec<string, string>): string {
  const bind = (table: string, names: readonly string[], source: string) =>
    `local ${table} = {${names.map((name, i) => `${name} = ${source}[${i + 1}]`).join(', ')}}`;
  return [
    bind('K', spec.keys, 'KEYS'),
    bind('A', spec.args, 'ARGV'),
    ...(spec.rest ? [`local R = {} for i = ${spec.args.length + 1}, #ARGV do R[#R + 1] = ARGV[i] end`] : []),
    ...(spec.clock ? [redisNowLua] : []),
    spec.lua,
  ].join('\n');
}

/** Defines `spec` on `redis`: `defineScript<R>()(redis, spec)`, so key and argument names are inferred and checked. */
export function defineScript<R>() {
  return <const K extends string, const A extends string>(
    redis: RedisConnection,
    spec: ScriptSpec<K, A>,
  ): RedisScript<K, A, R> => defineOn<R, K, A>(redis, spec);
}

function defineOn<R, K extends string, A extends string>(
  redis: RedisConnection,
  spec: ScriptSpec<K, A>,
): RedisScript<K, A, R> {
  redis.defineCommand(spec.name, { numberOfKeys: spec.keys.length, lua: scriptSource(spec) });
  // defineCommand adds the method at run time; its type is the one place that says so.
  const command = (redis as unknown as Record<string, (...values: Array<string | number>) => Promise<R>>)[
    spec.name
  ]!;
  return (keys, args, rest = []) =>
    command.call(
      redis,
      ...spec.keys.map((name) => keys[name]),
      ...spec.args.map((name) => args[name]),
      ...rest,
    );
}
