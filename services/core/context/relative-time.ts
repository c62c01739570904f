const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * "2 mins ago", "3 hours ago", "5 days ago": how a chatbot prompt says when something was said.
 * Rounded down, so a turn from 119 s ago is "1 min ago"; the future (clock skew) is "just now".
 */
export function relativeTime(then: Date, now: Date): string {
  const ms = now.getTime() - then.getTime();
  if (ms < 45_000) return 'just now';
  if (ms < HOUR) return ago(Math.max(1, Math.floor(ms / MINUTE)), 'min');
  if (ms < DAY) return ago(Math.floor(ms / HOUR), 'hour');
  if (ms < 30 * DAY) return ago(Math.floor(ms / DAY), 'day');
  if (ms < 365 * DAY) return ago(Math.floor(ms / (30 * DAY)), 'month');
  return ago(Math.floor(ms / (365 * DAY)), 'year');
}

function ago(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
}
