/**
 * Ordered delivery (`ordering: "fifo"`) through the real API, workers, PostgreSQL, Redis and an
 * HTTP receiver: events reach a FIFO subscription one at a time in the order they were accepted,
 * under two worker processes, random 500s and a worker killed mid-run; a given-up event lets the
 * next one go and stays in the log; leaving FIFO loses nothing that waited its turn.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { subscriptionGateKeys } from '@webhooks/shared';
import { hostCapKeys } from '../src/delivery/host-gate.js';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../../scripts/lib/receiver.js';
import { waitFor } from '../../../scripts/lib/wait.js';
import { spawnWorker, type WorkerProcess } from '../../../test/support/worker-process.js';

/** The `seq` of a request's event. */
const seqOf = (request: ReceivedRequest) => (JSON.parse(request.body) as { data: { seq: number } }).data.seq;

/** The `seq` of each request's event, in arrival order. */
const sequence = (requests: ReceivedRequest[]) => requests.map(seqOf);

/** Publishes event number `seq` for `account` through `stack`'s API, which must accept it. */
async function publishSeq(stack: TestStack, account: string, seq: number) {
  const response = await stack.api.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: stack.api.auth(account),
    payload: { type: 'call.started', data: { seq } },
  });
  expect(response.statusCode).toBe(202);
}

/**
 * True when every event that arrives again is followed by every later event that had arrived
 * before it, again (Google Pub/Sub's rule for ordering keys): retries repeat an event, a crash may
 * repeat a run of them, and the last copy of each event arrives in order.
 */
const lastCopiesInOrder = (values: number[]) =>
  values.every((value, i) =>
    values.slice(0, i).every((earlier) => earlier <= value || values.indexOf(earlier, i + 1) > i),
  );

/** A promise the test settles, and its settler. */
const gate = () => {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
};

describe('FIFO order under two worker processes, random 500s and a SIGKILL', () => {
  let api: TestApi;
  let receiver: Receiver;
  let workers: WorkerProcess[] = [];
  const env = () => ({
    ...testEnv(api.database.url, api.prefix, {
      CALLBACK_ALLOW_PRIVATE: 'true',
      DELIVERY_TIMEOUT_MS: '1000',
      DELIVERY_BACKOFF_MS: '50',
      DELIVERY_MAX_ATTEMPTS: '12',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_GRACE_MS: '1000',
    }),
  });
  beforeAll(async () => {
    api = await startTestApi('fifo-order', { CALLBACK_ALLOW_PRIVATE: 'true' });
    receiver = await startReceiver();
  });
  afterEach(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    workers = [];
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  it('delivers every event, in the order accepted, each one only after the one before it confirmed', async () => {
    const subscribe = async (path: string, ordering: 'fifo' | 'none') => {
      const response = await api.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: api.auth('acct-fifo'),
        payload: { callback_url: `${receiver.url}${path}`, ordering },
      });
      expect(response.statusCode).toBe(201);
      expect(response.json().ordering).toBe(ordering);
    };
    await subscribe('/fifo', 'fifo');
    await subscribe('/parallel', 'none');
    // A third of the answers fail at random: each failure holds the later events back.
    const answers: Array<{ seq: number; status: number }> = [];
    receiver.script('/fifo', [
      (request) => {
        const status = Math.random() < 0.3 ? 500 : 200;
        answers.push({ seq: sequence([request])[0]!, status });
        return status;
      },
    ]);
    workers.push(spawnWorker(env()), spawnWorker(env()));
    const events = 40;
    for (let seq = 0; seq < events; seq++) {
      const response = await api.app.inject({
        method: 'POST',
        url: '/api/events',
        headers: api.auth('acct-fifo'),
        payload: { type: 'call.started', data: { seq } },
      });
      expect(response.statusCode).toBe(202);
      if (seq === 15) {
        // One worker dies, whatever it was doing; another takes its place.
        await waitFor('a few ordered deliveries', () => receiver.at('/fifo').length >= 5);
        workers[0]!.child.kill('SIGKILL');
        workers.push(spawnWorker(env()));
      }
    }
    const confirmed = () => new Set(answers.filter((a) => a.status === 200).map((a) => a.seq));
    await waitFor(
      'every event confirmed at the FIFO callback',
      () => confirmed().size === events && receiver.at('/parallel').length >= events,
      120_000,
    );
    // Each event was sent only once every earlier one had been confirmed (a crash may send
    // confirmed ones again, never a later one early).
    let confirmedUpTo = -1;
    for (const { seq, status } of answers) {
      expect([seq, seq <= confirmedUpTo + 1]).toEqual([seq, true]);
      if (status === 200 && seq === confirmedUpTo + 1) confirmedUpTo = seq;
    }
    const arrivals = sequence(receiver.at('/fifo'));
    expect(lastCopiesInOrder(arrivals)).toBe(true);
    // The same event sent again after a crash or a failure keeps its webhook-id.
    const idOf = new Map<number, string>();
    receiver.at('/fifo').forEach((request, i) => {
      const id = String(request.headers['webhook-id']);
      expect(idOf.get(arrivals[i]!) ?? id).toBe(id);
      idOf.set(arrivals[i]!, id);
    });
  }, 180_000);
});

describe('FIFO ordering in the delivery log', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack('fifo-log', { DELIVERY_MAX_ATTEMPTS: '3', DELIVERY_BACKOFF_MS: '20' });
  });
  afterAll(() => stack.close());

  const publish = (account: string, seq: number) => publishSeq(stack, account, seq);

  it('holds later events behind a failing one until it is given up, then sends them; the given-up one stays in the log', async () => {
    const sub = await stack.subscribe('acct-given-up', {
      callback_url: `${stack.receiver.url}/given-up`,
      ordering: 'fifo',
    });
    stack.receiver.script('/given-up', [(request) => (seqOf(request) === 0 ? 500 : 200)]);
    for (let seq = 0; seq < 3; seq++) await publish('acct-given-up', seq);
    await waitFor('all three events', () => new Set(sequence(stack.receiver.at('/given-up'))).size === 3);
    expect(sequence(stack.receiver.at('/given-up'))).toEqual([0, 0, 0, 1, 2]);
    const log = await stack.api.app.inject({
      url: `/api/webhooks/${sub.id}/deliveries?status=failed`,
      headers: stack.api.auth('acct-given-up'),
    });
    expect(log.json().results).toMatchObject([{ attempts_made: 3 }]);
  });

  it('sends each event once and in order while later ones keep arriving, also after the backlog ran dry', async () => {
    await stack.subscribe('acct-arriving', {
      callback_url: `${stack.receiver.url}/arriving`,
      ordering: 'fifo',
    });
    // Bursts published while the earlier ones are delivered, and after they all arrived: the
    // worker handing each next event over must neither skip one stored meanwhile nor send one twice.
    let published = 0;
    for (let burst = 0; burst < 4; burst++) {
      for (let i = 0; i < 10; i++) await publish('acct-arriving', published++);
      if (burst % 2 === 1) {
        await waitFor('the burst delivered', () => stack.receiver.at('/arriving').length >= published);
      }
    }
    await waitFor('every event', () => stack.receiver.at('/arriving').length >= published);
    expect(sequence(stack.receiver.at('/arriving'))).toEqual(Array.from({ length: published }, (_, i) => i));
  });

  it('keeps a FIFO backlog behind a hanging callback from slowing the account’s other subscriptions', async () => {
    await stack.subscribe('acct-backlog', { callback_url: `${stack.receiver.url}/hangs`, ordering: 'fifo' });
    await stack.subscribe('acct-backlog', { callback_url: `${stack.receiver.url}/quick` });
    stack.receiver.script('/hangs', ['hang']);
    for (let seq = 0; seq < 20; seq++) await publish('acct-backlog', seq);
    await waitFor('every event at the unordered callback', () => stack.receiver.at('/quick').length === 20);
    // All of them arrived while the FIFO head was still in its first attempt.
    expect(stack.receiver.at('/hangs')).toHaveLength(1);
    expect(sequence(stack.receiver.at('/hangs'))).toEqual([0]);
  });

  it('loses none of the deliveries waiting their turn when the subscription leaves FIFO ordering', async () => {
    const sub = await stack.subscribe('acct-switch', {
      callback_url: `${stack.receiver.url}/switch`,
      ordering: 'fifo',
    });
    // The head hangs (until the attempt's timeout), so the later events wait without jobs.
    stack.receiver.script('/switch', [{ status: 200, afterMs: 2_000 }, 200]);
    for (let seq = 0; seq < 5; seq++) await publish('acct-switch', seq);
    await waitFor('the head in flight', () => stack.receiver.at('/switch').length === 1);
    const switched = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${sub.id}`,
      headers: stack.api.auth('acct-switch'),
      payload: { ordering: 'none' },
    });
    expect(switched.json().ordering).toBe('none');
    await waitFor('every event', () => new Set(sequence(stack.receiver.at('/switch'))).size === 5);
    await waitFor('nothing pending', async () => {
      const again = await stack.api.app.inject({
        url: `/api/webhooks/${sub.id}/deliveries?status=pending`,
        headers: stack.api.auth('acct-switch'),
      });
      return again.json().count === 0;
    });
  });

  it('sends an event whose fan-out read the subscription as FIFO while it left FIFO ordering', async () => {
    const account = 'acct-left-mid-fan-out';
    const sub = await stack.subscribe(account, {
      callback_url: `${stack.receiver.url}/left`,
      ordering: 'fifo',
    });
    const holder = new pg.Client({ connectionString: stack.api.database.url });
    const watcher = new pg.Client({ connectionString: stack.api.database.url });
    await Promise.all([holder.connect(), watcher.connect()]);
    /** The backends waiting for a lock backend `pid` holds, but the worker's partition maintenance. */
    const blockedBy = async (pid: number) =>
      (
        await watcher.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
           WHERE $1::int = ANY(pg_blocking_pids(pid)) AND query NOT LIKE '%create_log_partition%'`,
          [pid],
        )
      ).rows.map((row) => row.pid);
    try {
      // The test's transaction stores the event's id first, so that the fan-out's statement, once
      // it has read the subscription as FIFO and locked it, waits for that transaction to end.
      const eventId = uuidv7();
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO events (id, account_id, type, data, occurred_at) VALUES ($1, $2, 'call.started', '{}', now())`,
        [eventId, account],
      );
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await stack.publisher.publish({
        id: eventId,
        accountId: account,
        type: 'call.started',
        data: { seq: 0 },
      });
      const fanOut = await waitFor(
        'the fan-out waiting for the test',
        async () => (await blockedBy(holderPid))[0],
      );
      let answered = false;
      const switching = stack.api.app
        .inject({
          method: 'PUT',
          url: `/api/webhooks/${sub.id}`,
          headers: stack.api.auth(account),
          payload: { ordering: 'none' },
        })
        .finally(() => {
          answered = true;
        });
      await waitFor('the update answered, or waiting for the fan-out', async () =>
        answered ? true : (await blockedBy(fanOut)).length > 0,
      );
      await holder.query('ROLLBACK');
      expect((await switching).json().ordering).toBe('none');
      await waitFor('the event', () => stack.receiver.at('/left').length === 1);
    } finally {
      await holder.end();
      await watcher.end();
    }
  });
});

describe('the ordered hand-over after a head failed once', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // A round's claim lasts the attempt's timeout and 5 s more: one left behind on the next event
    // would hold it back for over a minute, far past the wait below.
    stack = await startTestStack('fifo-retried', {
      DELIVERY_MAX_ATTEMPTS: '3',
      DELIVERY_BACKOFF_MS: '20',
      DELIVERY_TIMEOUT_MS: '60000',
    });
  });
  afterAll(() => stack.close());

  it('sends the events behind it once it is confirmed on its retry', async () => {
    await stack.subscribe('acct-retried', {
      callback_url: `${stack.receiver.url}/retried`,
      ordering: 'fifo',
    });
    let failed = false;
    stack.receiver.script('/retried', [
      (request) => {
        // The third event fails once, in the middle of a hand-over that has claimed the fourth.
        if (seqOf(request) !== 2 || failed) return 200;
        failed = true;
        return 500;
      },
    ]);
    for (let seq = 0; seq < 5; seq++) await publishSeq(stack, 'acct-retried', seq);
    await waitFor('every event', () => new Set(sequence(stack.receiver.at('/retried'))).size === 5);
    expect(sequence(stack.receiver.at('/retried'))).toEqual([0, 1, 2, 2, 3, 4]);
  });
});

describe('ordered events handed over one after another', () => {
  let stack: TestStack;
  let db: pg.Client;
  beforeAll(async () => {
    stack = await startTestStack('fifo-recording');
    db = new pg.Client({ connectionString: stack.api.database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db.end();
    await stack.close();
  });

  it('the next one is sent once the one before it is confirmed, not recorded before it, and sent again after it when that record fails', async () => {
    const sub = await stack.subscribe('acct-recording', {
      callback_url: `${stack.receiver.url}/recording`,
      ordering: 'fifo',
    });
    // The first copies of events 0 and 1 are answered only when the test lets them go.
    const first = gate();
    const second = gate();
    const held = new Map([
      [0, first.opened],
      [1, second.opened],
    ]);
    stack.receiver.script('/recording', [
      (request) => {
        const until = held.get(seqOf(request));
        held.delete(seqOf(request));
        return until === undefined ? 200 : { status: 200, heldUntil: until };
      },
    ]);
    for (let seq = 0; seq < 3; seq++) await publishSeq(stack, 'acct-recording', seq);
    const count = async (status?: string) => {
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM deliveries WHERE subscription_id = $1 AND ($2::text IS NULL OR status::text = $2)',
        [sub.id, status ?? null],
      );
      return rows[0]!.n;
    };
    const arrived = () => stack.receiver.at('/recording');
    // Event 0 is answered once all three are stored, so its end hands 1 and 2 over in turn.
    await waitFor(
      'event 0 at the callback, all three stored',
      async () => arrived().length === 1 && (await count()) === 3,
    );
    first.open();
    await waitFor('event 1 at the callback', () => arrived().length === 2);
    // Event 1's record waits on its delivery's row, locked here, when the callback confirms it.
    const lock = new pg.Client({ connectionString: stack.api.database.url });
    await lock.connect();
    const lockPid = (await lock.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await lock.query('BEGIN');
    await lock.query('SELECT id FROM deliveries WHERE subscription_id = $1 AND event_id = $2 FOR UPDATE', [
      sub.id,
      arrived()[1]!.headers['webhook-id'],
    ]);
    second.open();
    await waitFor('event 2 at the callback while event 1 is not recorded', () => arrived().length === 3);
    // The only statement that writes that row, hence the only one its lock can hold up but the
    // worker's partition maintenance (its CREATE waits for every lock on the table): ending that
    // one instead would leave the record to commit.
    const recordPid = await waitFor('event 1’s record waiting on the lock', async () => {
      const { rows } = await db.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
         WHERE $1::int = ANY(pg_blocking_pids(pid)) AND query NOT LIKE '%create_log_partition%'`,
        [lockPid],
      );
      return rows[0]?.pid;
    });
    // The record fails: event 2's must not commit without it, and both are sent again, in order.
    await db.query('SELECT pg_terminate_backend($1)', [recordPid]);
    await waitFor(
      'event 1’s record ended with its backend',
      async () =>
        (await db.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [recordPid])).rowCount === 0,
    );
    await lock.query('ROLLBACK');
    await lock.end();
    await waitFor('all three recorded as delivered', async () => (await count('succeeded')) === 3);
    expect(sequence(arrived())).toEqual([0, 1, 2, 1, 2]);
  });

  it('go one at a time whatever their subscription’s in-flight limit, and give their host’s slot back at the end', async () => {
    const sub = await stack.subscribe('acct-slots', {
      callback_url: `${stack.receiver.url}/slots`,
      ordering: 'fifo',
    });
    const first = gate();
    let holding = true;
    stack.receiver.script('/slots', [
      (request) => {
        if (seqOf(request) !== 0 || !holding) return 200;
        holding = false;
        return { status: 200, heldUntil: first.opened };
      },
    ]);
    for (let seq = 0; seq < 4; seq++) await publishSeq(stack, 'acct-slots', seq);
    const arrived = () => stack.receiver.at('/slots');
    const pending = async () =>
      (
        await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM deliveries WHERE subscription_id = $1 AND status = 'pending'",
          [sub.id],
        )
      ).rows[0]!.n;
    await waitFor(
      'event 0 at the callback, all four stored',
      async () => arrived().length === 1 && (await pending()) === 4,
    );
    // The subscription's gate is full (as slots that workers killed mid-attempt leave until their
    // leases end): the events after event 0, handed over once it is confirmed, do not ask it.
    const { leases } = subscriptionGateKeys(stack.api.prefix, sub.id);
    const redis = stack.api.app.redis;
    const lost = Array.from({ length: 100 }, (_, i) => [Date.now() + 600_000, `lost-${i}`] as const);
    await redis.zadd(leases, ...lost.flat());
    first.open();
    await waitFor('events 1 to 3 at the callback', () => arrived().length === 4);
    expect(sequence(arrived())).toEqual([0, 1, 2, 3]);
    expect(await redis.zscore(leases, 'lost-0')).not.toBeNull();
    await waitFor('all four recorded', async () => (await pending()) === 0);
    const { rows: limits } = await db.query<{ in_flight_limit: number }>(
      `SELECT a.in_flight_limit FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
       WHERE d.subscription_id = $1`,
      [sub.id],
    );
    expect(limits.map((row) => row.in_flight_limit)).toEqual([1, 1, 1, 1]);
    const host = hostCapKeys(stack.api.prefix, new URL(stack.receiver.url).hostname);
    await waitFor('the host’s slot given back', async () => (await redis.zcard(host.leases)) === 0);
  });
});
