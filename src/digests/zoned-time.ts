/** Calendar parts of an instant as seen in a time zone. */
export interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

export function zonedParts(at: Date, timeZone: string): ZonedParts {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(at)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return {
    year: parts.year ?? 0,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: parts.hour ?? 0,
    minute: parts.minute ?? 0,
  };
}

/**
 * The instant at which a zone's wall clock shows this date and time. A time skipped by a
 * daylight-saving jump resolves to the same wall time shifted by the jump (02:30 -> 03:30).
 */
export function zonedToInstant(
  date: { year: number; month: number; day: number },
  hour: number,
  minute: number,
  timeZone: string,
): Date {
  const wanted = Date.UTC(date.year, date.month - 1, date.day, hour, minute);
  let guess = wanted;
  for (let i = 0; i < 3; i++) {
    const seen = zonedParts(new Date(guess), timeZone);
    const shown = Date.UTC(seen.year, seen.month - 1, seen.day, seen.hour, seen.minute);
    if (shown === wanted) break;
    guess += wanted - shown;
  }
  return new Date(guess);
}

/** The last time at or before `now` when a daily schedule (hour:minute in the zone) fell due. */
export function lastDue(now: Date, hour: number, minute: number, timeZone: string): Date {
  const today = zonedParts(now, timeZone);
  const candidate = zonedToInstant(today, hour, minute, timeZone);
  if (candidate.getTime() <= now.getTime()) return candidate;
  const yesterday = new Date(Date.UTC(today.year, today.month - 1, today.day) - 86_400_000);
  return zonedToInstant(
    { year: yesterday.getUTCFullYear(), month: yesterday.getUTCMonth() + 1, day: yesterday.getUTCDate() },
    hour,
    minute,
    timeZone,
  );
}

/** `YYYY-MM-DD` of an instant in a zone. */
export function zonedDay(at: Date, timeZone: string): string {
  const p = zonedParts(at, timeZone);
  return `${p.year}-${String(p.month).padStart(2, '0')}-${String(p.day).padStart(2, '0')}`;
}

/** `HH:MM` of an instant in a zone (24-hour clock). */
export function zonedClock(at: Date, timeZone: string): string {
  const p = zonedParts(at, timeZone);
  return `${String(p.hour).padStart(2, '0')}:${String(p.minute).padStart(2, '0')}`;
}

/**
 * An instant as people of a zone read it, with UTC in brackets when the zone is not UTC:
 * `2026-11-22 09:00 Europe/Paris (08:00 UTC)`, or `2026-11-22 09:00 UTC`. The UTC date is named
 * too when it differs (`2026-11-22 09:00 Pacific/Auckland (20:00 UTC on 2026-11-21)`).
 */
export function zonedMoment(at: Date, timeZone: string): string {
  const local = `${zonedDay(at, timeZone)} ${zonedClock(at, timeZone)} ${timeZone}`;
  if (isUtc(timeZone)) return local;
  const utcDay = at.toISOString().slice(0, 10);
  const utc = `${at.toISOString().slice(11, 16)} UTC${utcDay === zonedDay(at, timeZone) ? '' : ` on ${utcDay}`}`;
  return `${local} (${utc})`;
}

/** Whether a zone's clock is UTC's all year (`UTC`, `Etc/UTC`, `GMT`...). */
function isUtc(timeZone: string): boolean {
  const january = new Date(Date.UTC(2026, 0, 1, 12));
  const july = new Date(Date.UTC(2026, 6, 1, 12));
  return [january, july].every(
    (at) => zonedClock(at, timeZone) === '12:00' && zonedDay(at, timeZone) === at.toISOString().slice(0, 10),
  );
}
