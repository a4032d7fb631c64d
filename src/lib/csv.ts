// RFC 4180 CSV: quote fields holding commas, quotes or line breaks; rows end in \n.

// A cell a spreadsheet would run as a formula; phone numbers ("+1415…") and negative numbers are left alone.
const FORMULA = /^(?:[=@\t\r]|[+-][^\d])/;

export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let s = String(value);
  if (FORMULA.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function csv<K extends string>(columns: readonly K[], rows: Record<K, unknown>[]): string {
  const lines = [columns.join(",")];
  for (const row of rows) lines.push(columns.map((c) => csvCell(row[c])).join(","));
  return `${lines.join("\n")}\n`;
}

/**
 * Reads CSV text: quoted fields (with "" for a quote, and line breaks inside), CRLF or LF rows, a
 * leading byte-order mark dropped, blank lines skipped. Throws on a quote left open.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const endRow = () => {
    row.push(field);
    if (row.length > 1 || row[0] !== "") rows.push(row);
    row = [];
    field = "";
  };
  for (; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch !== '"') field += ch;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (ch === '"' && field === "") quoted = true;
    else if (ch === ",") {
      row.push(field);
      field = "";
    } else if (ch === "\n") endRow();
    else if (ch === "\r") {
      if (text[i + 1] === "\n") i++;
      endRow();
    } else field += ch;
  }
  if (quoted) throw new Error("a quoted field is not closed");
  if (field !== "" || row.length > 0) endRow();
  return rows;
}
