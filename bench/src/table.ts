// The rows' goals and the table they are printed in.
import type { Result } from "./scenario.ts";

export function fmt(n: number | undefined, digits = 0): string {
  return n === undefined || !Number.isFinite(n) ? "-" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * Holds a row to a goal: its req/s over `base`'s at least `min`; over the baseline's rate in the
 * same turns when the row was measured paired with it.
 */
export function hold(r: Result, base: Result, min?: number): void {
  r.baseline = base.scenario;
  r.ratio = r.rps / (r.paired?.baseline === base.scenario ? r.paired.rps : base.rps);
  if (min === undefined) return;
  r.goal = `>= ${min} x ${base.scenario}`;
  r.pass = r.ratio >= min;
}

/**
 * A row of its own holding `r`'s p99 to at most `max` times `base`'s (over the same turns when
 * `r` was measured paired with it): the tail an outside harness compares, beside the rate. Each
 * p99 is of all the requests of its turns together (wrk.ts merges them), and the note gives the
 * turns' own p99s, the worst of which a shorter run could have met alone.
 */
export function tailRow(r: Result, base: Result, max: number): Result {
  const baseP99 = r.paired?.baseline === base.scenario ? r.paired.p99 : base.p99;
  const ratio = r.p99 / baseP99;
  return {
    scenario: `p99 of ${r.scenario}`,
    group: r.group,
    url: r.url,
    rps: Number.NaN,
    p50: Number.NaN,
    p99: r.p99,
    requests: r.requests,
    ok2xx: r.ok2xx,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    baseline: base.scenario,
    ratio,
    note: `${base.scenario}: p99 ${fmt(baseP99, 1)} ms${r.paired ? `; the turns' p99s ${r.paired.turns.map((t) => `${fmt(t.p99, 1)}/${fmt(t.baselineP99, 1)}`).join(", ")} ms (row/baseline)` : ""}`,
    goal: `<= ${max} x p99 of ${base.scenario}`,
    pass: ratio <= max,
  };
}

/**
 * Holds a row measured at one table size to the same row at another: each as its share of the
 * baseline it ran in turns with, within 20% of each other.
 */
export function holdGrowth(r: Result, than: Result): void {
  const share = (x: Result) => x.rps / (x.paired?.rps ?? Number.NaN);
  r.baseline = than.scenario;
  r.ratio = share(r) / share(than);
  r.goal = `within 20% of ${than.scenario}, each over its baseline in the same turns`;
  r.pass = r.ratio >= 0.8 && r.ratio <= 1.2;
}

/** The row's share of its baseline in each turn, lowest to highest: how far one turn can be off. */
function turnShares(p: NonNullable<Result["paired"]>): string {
  const shares = p.turns.map((t) => t.rps / t.baselineRps).sort((a, b) => a - b);
  return `${fmt(shares[0], 2)}-${fmt(shares[shares.length - 1], 2)} of it`;
}

/** A ratio as printed: three decimals where it is held to a goal (0.4988 reads 0.499, not 0.50 beside its FAIL). */
export function ratioText(r: Result): string {
  return r.ratio === undefined ? "" : fmt(r.ratio, r.pass === undefined ? 2 : 3);
}

function cells(r: Result): string[] {
  const paired = r.paired
    ? `baseline in the same turns: ${fmt(r.paired.rps)} req/s (${r.paired.rounds} x ${r.paired.secondsEach} s each; turns ${turnShares(r.paired)})`
    : undefined;
  return [
    r.scenario,
    fmt(r.rps),
    fmt(r.p50, 1),
    fmt(r.p99, 1),
    `${r.non2xx}/${r.errors + r.timeouts}`,
    ratioText(r),
    r.goal ?? (r.baseline ? `(of ${r.baseline})` : ""),
    r.pass === undefined ? "" : r.pass ? "PASS" : "FAIL",
    [r.note, paired, r.load].filter(Boolean).join("; "),
  ];
}

/** One line per row, columns aligned (numbers to the right), a blank line between groups. */
export function table(results: Result[]): string {
  const head = ["path", "req/s", "p50 ms", "p99 ms", "non2xx/err", "ratio", "goal", "", "note"];
  const rows = results.map(cells);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => c.map((s, i) => (i === 0 || i >= 6 ? s.padEnd(w[i]!) : s.padStart(w[i]!))).join("  ");
  const out = [line(head), w.map((n) => "-".repeat(n)).join("  ")];
  let group = "";
  for (let i = 0; i < rows.length; i++) {
    if (results[i]!.group !== group && group !== "") out.push("");
    group = results[i]!.group;
    out.push(line(rows[i]!));
  }
  return out.join("\n");
}
