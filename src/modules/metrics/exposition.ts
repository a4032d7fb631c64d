// Prometheus's text format (version 0.0.4), written by hand: a family is its `# HELP` and `# TYPE`
// lines and its samples; a histogram is its cumulative `_bucket{le}` samples, `+Inf` last, then
// `_sum` and `_count`. Counting is kept apart from writing: the hot path only adds numbers.

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** A histogram's counts: one per upper bound, and one past the last (`+Inf`). Not cumulative until written. */
export class Histogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

/** A label value as the format quotes it: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}

/** A sample value: integers as they are, infinities and NaN in the format's words. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

export type Labels = Readonly<Record<string, string>>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(value)}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** A page being written: families one after the other, each with its samples. */
export class Page {
  private readonly lines: string[] = [];

  /** Opens a family; its samples follow. The help text is one line (backslashes and newlines escaped). */
  family(name: string, type: "counter" | "gauge" | "histogram", help: string): this {
    this.lines.push(`# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    this.lines.push(`${name}${labelText(labels)} ${formatValue(value)}`);
    return this;
  }

  /** A histogram's samples under `name` (the family's name), with its other labels. */
  histogram(name: string, labels: Labels, h: Histogram): this {
    let cumulative = 0;
    for (let i = 0; i <= h.bounds.length; i++) {
      cumulative += h.counts[i];
      const le = i < h.bounds.length ? String(h.bounds[i]) : "+Inf";
      this.sample(`${name}_bucket`, { ...labels, le }, cumulative);
    }
    this.sample(`${name}_sum`, labels, h.sum);
    return this.sample(`${name}_count`, labels, h.count);
  }

  text(): string {
    return `${this.lines.join("\n")}\n`;
  }
}
