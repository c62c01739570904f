/** Denodo takes `vdp_database_names` as a comma-separated string; arrays are accepted too. */
export function databaseNames(value: unknown): string[] | undefined {
  const names = Array.isArray(value)
    ? value.filter((v): v is string => typeof v === 'string')
    : typeof value === 'string'
      ? value.split(',')
      : [];
  const cleaned = [...new Set(names.map((n) => n.trim()).filter(Boolean))];
  return cleaned.length ? cleaned : undefined;
}
