/**
 * A start-up check for subscriptions naming event types (or a kind) the catalogue no longer has:
 * they keep receiving what remains, and each gets a warning, so an operator learns who still names a removed type.
 */
import type { Logger } from 'pino';
import type { Pool } from '@webhooks/db';
import { patternSelectsTypeSql, type Catalogue } from '@webhooks/shared';

/** Most subscriptions named in the warnings of one start. */
export const maxRetiredWarnings = 1000;

/**
 * Logs one warning per subscription naming types or a kind outside `catalogue`.
 * @returns how many subscriptions were named (at most {@link maxRetiredWarnings})
 */
export async function warnOfRetiredEventTypes(
  pool: Pool,
  catalogue: Catalogue,
  log: Logger,
): Promise<number> {
  const retired = `NOT EXISTS (SELECT 1 FROM unnest($1::text[]) AS t(type) WHERE ${patternSelectsTypeSql('p.pattern', 't.type')})`;
  const { rows } = await pool.query<{
    id: string;
    account_id: string;
    kind: string | null;
    retired: string[];
  }>(
    `
    SELECT s.id::text, s.account_id, s.kind,
      ARRAY(
        SELECT p.pattern FROM unnest(s.event_types) AS p(pattern)
        WHERE ${retired}
      ) AS retired
    FROM subscriptions s
    WHERE (s.kind IS NOT NULL AND NOT s.kind = ANY($2::text[]))
       OR EXISTS (
        SELECT 1 FROM unnest(s.event_types) AS p(pattern)
        WHERE ${retired})
    ORDER BY s.id
    LIMIT $3`,
    [catalogue.types, catalogue.kinds.map((k) => k.kind), maxRetiredWarnings],
  );
  for (const row of rows) {
    log.warn(
      {
        subscriptionId: row.id,
        accountId: row.account_id,
        ...(row.kind !== null && !catalogue.isKind(row.kind) ? { retiredKind: row.kind } : {}),
        retiredEventTypes: row.retired,
        catalogue: catalogue.source,
      },
      'subscription names event types the catalogue no longer has: it is delivered nothing of them',
    );
  }
  return rows.length;
}
