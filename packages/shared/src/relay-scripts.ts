/**
 * The relay session's scripts (`relay.ts`): the worker adds an attempt to its stream within the
 * session's bounds (entries and bytes, the oldest dropped first) and takes it out when the attempt
 * ends; the API takes out an expunged event's. Bytes are counted in the session's `bytes` key, each
 * entry carrying its own `size`.
 */
import type { RedisConnection } from '@webhooks/publisher';
import { defineScript } from './redis-script.js';

/** Lua: the `request_id`, `size` and `message_id` fields of a stream entry's field list `f`. */
const entryFields = `local function fields(f)
  local rid, size, mid = nil, 0, nil
  for i = 1, #f, 2 do
    if f[i] == 'request_id' then rid = f[i + 1]
    elseif f[i] == 'size' then size = tonumber(f[i + 1])
    elseif f[i] == 'message_id' then mid = f[i + 1] end
  end
  return rid, size, mid
end`;

/** A session's keys the scripts use ({@link relayKeys}). */
type SessionKeys = { requests: string; bytes: string; pending: string };

/** What adding one attempt came to. */
export type RelayAdded =
  /** In the stream as `entryId`; `dropped` are the older attempts pushed out, with their waiters' replies lists. */
  | { added: true; entryId: string; dropped: Array<{ requestId: string; repliesKey: string }> }
  /** Larger than the whole session's byte bound on its own: not added. */
  | { added: false };

/** The session's scripts on `redis`. */
export function relayScripts(redis: RedisConnection) {
  const add = defineScript<string[]>()(redis, {
    name: 'relayAdd',
    keys: ['requests', 'bytes', 'pending'],
    args: ['requestId', 'messageId', 'replies', 'body', 'headers', 'maxEntries', 'maxBytes', 'ttlMs'],
    lua: `${entryFields}
local size = string.len(A.body) + string.len(A.headers)
local maxBytes = tonumber(A.maxBytes)
if size > maxBytes then return {} end
-- A stream that expired took its count with it.
if redis.call('EXISTS', K.requests) == 0 then redis.call('SET', K.bytes, 0) end
local id = redis.call('XADD', K.requests, '*', 'request_id', A.requestId, 'body', A.body, 'headers', A.headers,
  'size', size, 'message_id', A.messageId)
redis.call('HSET', K.pending, A.requestId, A.replies)
local total = redis.call('INCRBY', K.bytes, size)
local out = {id}
while total > maxBytes or redis.call('XLEN', K.requests) > tonumber(A.maxEntries) do
  local oldest = redis.call('XRANGE', K.requests, '-', '+', 'COUNT', 1)[1]
  local rid, sz = fields(oldest[2])
  redis.call('XDEL', K.requests, oldest[1])
  total = redis.call('DECRBY', K.bytes, sz)
  local replies = redis.call('HGET', K.pending, rid)
  if replies then
    redis.call('HDEL', K.pending, rid)
    out[#out + 1] = rid
    out[#out + 1] = replies
  end
end
for _, key in ipairs({K.requests, K.bytes, K.pending}) do redis.call('PEXPIRE', key, A.ttlMs) end
return out`,
  });

  const remove = defineScript<number>()(redis, {
    name: 'relayRemove',
    keys: ['requests', 'bytes', 'pending'],
    args: ['entryId', 'requestId'],
    lua: `${entryFields}
redis.call('HDEL', K.pending, A.requestId)
local entry = redis.call('XRANGE', K.requests, A.entryId, A.entryId)[1]
if not entry then return 0 end
local _, size = fields(entry[2])
redis.call('XDEL', K.requests, A.entryId)
redis.call('DECRBY', K.bytes, size)
return size`,
  });

  const expunge = defineScript<number>()(redis, {
    name: 'relayExpunge',
    keys: ['requests', 'bytes'],
    args: ['messageId'],
    lua: `${entryFields}
local gone = 0
for _, entry in ipairs(redis.call('XRANGE', K.requests, '-', '+')) do
  local _, size, mid = fields(entry[2])
  if mid == A.messageId then
    redis.call('XDEL', K.requests, entry[1])
    redis.call('DECRBY', K.bytes, size)
    gone = gone + 1
  end
end
return gone`,
  });

  return {
    /**
     * Adds one attempt's request to `keys`' session, dropping the oldest past `maxEntries` or
     * `maxBytes` (bytes of bodies and headers); every key expires `ttlMs` later. @throws ioredis' errors
     */
    async add(
      keys: SessionKeys,
      request: { requestId: string; messageId: string; repliesKey: string; body: string; headers: string },
      bounds: { maxEntries: number; maxBytes: number; ttlMs: number },
    ): Promise<RelayAdded> {
      const out = await add(keys, {
        requestId: request.requestId,
        messageId: request.messageId,
        replies: request.repliesKey,
        body: request.body,
        headers: request.headers,
        maxEntries: bounds.maxEntries,
        maxBytes: bounds.maxBytes,
        ttlMs: bounds.ttlMs,
      });
      if (out.length === 0) return { added: false };
      const dropped: Array<{ requestId: string; repliesKey: string }> = [];
      for (let i = 1; i + 1 < out.length; i += 2)
        dropped.push({ requestId: out[i]!, repliesKey: out[i + 1]! });
      return { added: true, entryId: out[0]!, dropped };
    },
    /** Takes an ended attempt's entry out; resolves with the bytes it freed (0 when gone already). @throws ioredis' errors */
    remove(keys: SessionKeys, entryId: string, requestId: string) {
      return remove(keys, { entryId, requestId });
    },
    /**
     * Takes out the entries of message `messageId` (the `webhook-id` header: the event's id), whose
     * payload was expunged; resolves with how many went. @throws ioredis' errors
     */
    expunge(keys: SessionKeys, messageId: string) {
      return expunge(keys, { messageId });
    },
  };
}
