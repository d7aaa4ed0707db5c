// What may reach a terminal. A name is the tenant's to choose, so it may hold escape sequences
// (a title change, a screen clear, a hidden line) or bidirectional overrides: every string printed
// for a terminal goes through `clean`; JSON and YAML escape the same characters instead.
import { stripVTControlCharacters } from "node:util";
import { Document, Scalar, visit } from "yaml";

// C0 and C1 controls, DEL, and the bidirectional marks, embeddings, overrides and isolates.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// What JSON.stringify and YAML leave raw of those (they escape C0 themselves), and the line and
// paragraph separators.
const RAW = /[\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** The text without escape sequences and control characters (a tab or line break becomes a space). */
export function clean(text: string): string {
  return stripVTControlCharacters(text).replace(/[\t\n\r]/g, " ").replace(CONTROL, "");
}

/** JSON text with the rest escaped: in JSON text they occur only inside strings, so it means the same. */
export function escapeJson(json: string): string {
  return json.replace(RAW, escaped);
}

/** YAML of a value; a string holding one of them is written double-quoted, where `\uXXXX` stands for it. */
export function toYaml(value: unknown): string {
  const doc = new Document(value);
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === "string" && new RegExp(RAW.source).test(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return doc.toString({ lineWidth: 0 }).replace(RAW, escaped).trimEnd();
}

/** Writes to stderr, each line cleaned (messages quote names and the user's input). */
export function say(text: string): void {
  process.stderr.write(text.split("\n").map(clean).join("\n"));
}
