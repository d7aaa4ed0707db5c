// The rules step (`--only rules`): one chain of BENCH_RULES rules (10,000), made through the API
// 16 at a time (each POST without a position, so each goes first: the same insert the clients
// of a firewall make most), of the kinds a security group holds (accept with an address and a
// port range, drop, jump). Then its rows, each a wrk row with its p50 and p99: the chain's whole
// list (in position order, every rule's position worked out), a page of it, one rule (its
// position counted), and an insert at position 1 (every rule after it moves one down), which
// grows the chain as it runs.
import { JSON_TYPE } from "./bridges.ts";
import type { Result, Runner } from "./scenario.ts";
import { RULES } from "./settings.ts";
import { fmt } from "./table.ts";

type Api = (url: string | URL, init?: RequestInit) => Promise<Response>;

const CONCURRENCY = 16;
/** Connections for the whole list: each answer is megabytes, so fewer at once (its p99 is the figure). */
const LIST_CONNECTIONS = 4;

export interface RulesFigures {
  rules: number;
  /** Seconds to make them through the API. */
  buildSeconds: number;
  /** Rules in the chain after the insert row ran. */
  rulesAfter: number;
  /** Bytes of the whole list's answer. */
  listBytes: number;
  rows: string[];
}

async function post(api: Api, url: string, body: unknown): Promise<{ id: string; position?: number }> {
  const r = await api(url, { method: "POST", headers: JSON_TYPE, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`POST ${url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as { id: string; position?: number };
}

/** The i-th rule: an accept of a /32 and a port range, a drop, or a jump to the target chain. */
function rule(i: number, jumpTo: string): Record<string, unknown> {
  switch (i % 3) {
    case 0:
      return { type: "accept", nwSrcAddress: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, nwSrcLength: 32, nwProto: 6, tpDst: { start: 1024 + (i % 1000), end: 2048 + (i % 1000) } };
    case 1:
      return { type: "drop", dlSrc: `02:00:00:${((i >> 16) & 255).toString(16).padStart(2, "0")}:${((i >> 8) & 255).toString(16).padStart(2, "0")}:${(i & 255).toString(16).padStart(2, "0")}` };
    default:
      return { type: "jump", jumpChainId: jumpTo, condInvert: true, nwProto: 17 };
  }
}

/** The chain and its rules, 16 POSTs at a time; gives the chain's id and the rules' ids. */
async function build(api: Api, base: string, tag: string): Promise<{ chain: string; rules: string[] }> {
  const chain = (await post(api, `${base}/chains`, { name: `bench-rules-${tag}`, tenantId: `bench-rules-${tag}` })).id;
  const target = (await post(api, `${base}/chains`, { name: `bench-rules-${tag}-target`, tenantId: `bench-rules-${tag}` })).id;
  const rules = new Array<string>(RULES);
  let next = 0;
  const worker = async () => {
    while (next < RULES) {
      const i = next++;
      rules[i] = (await post(api, `${base}/chains/${chain}/rules`, rule(i, target))).id;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, RULES) }, worker));
  return { chain, rules };
}

/** Checks the chain's list is whole and in order (positions 1..n), then gives its size in bytes. */
async function wholeList(api: Api, base: string, chain: string): Promise<{ n: number; bytes: number }> {
  const r = await api(`${base}/chains/${chain}/rules`);
  const text = await r.text();
  if (r.status !== 200) throw new Error(`GET /chains/${chain}/rules: ${r.status} ${text.slice(0, 200)}`);
  const list = JSON.parse(text) as { position: number }[];
  list.forEach((x, i) => {
    if (x.position !== i + 1) throw new Error(`the chain's rule ${i + 1} says position ${x.position}`);
  });
  return { n: list.length, bytes: Buffer.byteLength(text) };
}

/** `read` once the chain is quiet: tried again (every 2 s, 5 times) while what it reads moves under it. */
async function quiet<T>(read: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    await new Promise((r) => setTimeout(r, 2_000));
    try {
      return await read();
    } catch (err) {
      if (i === 5) throw err;
    }
  }
}

/** The step: the chain made, its four rows, the chain checked whole after them. */
export async function rulesRows(runner: Runner, api: Api, base: string, tag: string): Promise<RulesFigures> {
  console.error(`# rules: making a chain of ${fmt(RULES)} rules through the API`);
  const started = performance.now();
  const { chain, rules } = await build(api, base, tag);
  const buildSeconds = (performance.now() - started) / 1000;
  console.error(`# rules: made in ${fmt(buildSeconds, 1)} s (${fmt(RULES / buildSeconds)} rules/s)`);
  const { bytes: listBytes } = await wholeList(api, base, chain);
  const results: Result[] = [];
  results.push(await runner.scenario(`rules: GET /chains/{id}/rules (${fmt(RULES)} rules, whole)`, "rules", { url: `${base}/chains/${chain}/rules`, connections: LIST_CONNECTIONS }));
  results.push(await runner.scenario("rules: GET /chains/{id}/rules?limit=100 (a page)", "rules", { url: `${base}/chains/${chain}/rules?limit=100` }));
  const sample = rules.filter((_, i) => i % Math.max(1, Math.floor(rules.length / 1000)) === 0).slice(0, 1000);
  results.push(await runner.scenario("rules: GET /rules/{id}", "rules", { url: base, requests: sample.map((id) => ({ path: `/rules/${id}` })) }));
  const insert = { type: "accept", position: 1, nwDstAddress: "192.0.2.1", nwDstLength: 32 };
  results.push(await runner.scenario("rules: POST /chains/{id}/rules at position 1", "rules", { url: `${base}/chains/${chain}/rules`, method: "POST", headers: JSON_TYPE, body: JSON.stringify(insert) }));
  // Inserts wrk left under way (seated or queued at the gateway) finish after it stops, and an
  // unpaged list is read a page at a time: the check waits until the chain is quiet.
  const after = await quiet(() => wholeList(api, base, chain));
  console.error(`# rules: the chain holds ${fmt(after.n)} rules after the inserts, positions 1..n in order`);
  return { rules: RULES, buildSeconds, rulesAfter: after.n, listBytes, rows: results.map((r) => r.scenario) };
}

/** The lines a run prints under its table about the step. */
export function rulesLines(f: RulesFigures): string[] {
  return [
    `rules: a chain of ${fmt(f.rules)} rules made through the API in ${fmt(f.buildSeconds, 1)} s; its whole list ${fmt(f.listBytes / 1024)} KiB; ${fmt(f.rulesAfter)} rules after the insert row, positions 1..n checked; the reads and the insert are the table's rules rows (p50/p99 from wrk)`,
  ];
}
