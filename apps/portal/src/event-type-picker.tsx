/**
 * Choosing the event types a subscription receives, from the catalogue (`GET /api/event-types`):
 * all of its kind (the default, which takes in types added later), or some of them, each with its
 * description, deprecation and example payload. The choice is `null` for all, or the list of types.
 */
import type { EventCatalogue } from '@webhooks/client';
import { Json } from './parts.js';

/** One event type as the picker shows it. */
type PickableType = EventCatalogue['kinds'][number]['event_types'][number] & { example: unknown };

/** The types a subscription of `kind` (empty: any kind) can choose from, in catalogue order. */
export function pickableTypes(catalogue: EventCatalogue, kind: string): PickableType[] {
  return catalogue.kinds
    .filter((k) => kind === '' || k.kind === kind)
    .flatMap((k) => k.event_types.map((t) => ({ ...t, example: k.example_data[t.type] })));
}

/** The picker, as a fieldset; `error` is the API's detail for `/event_types`. */
export function EventTypePicker({
  types,
  chosen,
  onChange,
  error,
}: {
  types: PickableType[];
  chosen: string[] | null;
  onChange: (chosen: string[] | null) => void;
  error?: string | undefined;
}) {
  const toggle = (type: string, on: boolean) => {
    const next = new Set(chosen ?? []);
    if (on) next.add(type);
    else next.delete(type);
    onChange(types.map((t) => t.type).filter((t) => next.has(t)));
  };
  return (
    <fieldset class="field" aria-describedby={error ? 'event_types-error' : undefined}>
      <legend>Event types</legend>
      <label class="choice">
        <input
          type="checkbox"
          checked={chosen === null}
          onChange={(e) => onChange(e.currentTarget.checked ? null : [])}
        />
        All of them, including types added later
      </label>
      {chosen !== null &&
        types.map((t) => (
          <div class="choice" key={t.type}>
            <label>
              <input
                type="checkbox"
                checked={chosen.includes(t.type)}
                onChange={(e) => toggle(t.type, e.currentTarget.checked)}
              />
              <code>{t.type}</code> {t.deprecated && <span class="badge">deprecated</span>} {t.description}
            </label>
            <details>
              <summary>Example</summary>
              <Json label={`Example data of ${t.type}`} value={t.example} />
            </details>
          </div>
        ))}
      {error && (
        <p id="event_types-error" class="field-error">
          {error}
        </p>
      )}
    </fieldset>
  );
}
