/**
 * Reading a plain query-string value as a typed one, for fields declared
 * typed. Strict on purpose: what is accepted here is bound to PostgreSQL as
 * that type, so a value PostgreSQL would refuse must not get through.
 */

const NUMBER = /^-?(0|[1-9]\d{0,29})(\.\d{1,30})?([eE][+-]?\d{1,3})?$/;

export function parseNumber(s: string): number | undefined {
  if (!NUMBER.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

export function parseBoolean(s: string): boolean | undefined {
  return s === 'true' ? true : s === 'false' ? false : undefined;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * ISO 8601 dates and date-times (`2024-05-01`, `2024-05-01T10:00:00.5+02:00`);
 * the text itself is returned, as PostgreSQL reads these exactly. Calendar
 * checks reject `2024-02-30`, which PostgreSQL would answer with an error.
 */
export function parseDate(s: string): string | undefined {
  const m = DATE.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h = '0', mi = '0', sec = '0', , zone] = m.slice(1).map((v) => v ?? undefined) as (string | undefined)[];
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const probe = new Date(0);
  probe.setUTCFullYear(year, month - 1, day); // not Date.UTC, which reads years below 100 as 19xx
  if (year < 1 || probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  if (zone && /^[+-]/.test(zone) && (Number(zone.slice(1, 3)) > 15 || Number(zone.replace(':', '').slice(3) || '0') > 59)) return undefined;
  return s;
}
