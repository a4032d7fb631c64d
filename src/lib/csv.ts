// RFC 4180 CSV: quote fields holding commas, quotes or line breaks; rows end in \n.

// A cell a spreadsheet would run as a formula; phone numbers ("+1415…") and negative numbers are left alone.
const FORMULA = /^(?:[=@\t\r]|[+-][^\d])/;

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let s = String(value);
  if (FORMULA.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function csv<K extends string>(columns: readonly K[], rows: Record<K, unknown>[]): string {
  const lines = [columns.join(",")];
  for (const row of rows) lines.push(columns.map((c) => cell(row[c])).join(","));
  return lines.join("\n") + "\n";
}
