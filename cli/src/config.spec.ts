import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig, normalUrl, saveConfig, target } from "./config.ts";

describe("which token goes where", () => {
  let dir = "";
  const saved = { xdg: process.env["XDG_CONFIG_HOME"], url: process.env["VNM_URL"] };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "vnm-config-"));
    process.env["XDG_CONFIG_HOME"] = dir;
    delete process.env["VNM_URL"];
    saveConfig({
      current: "prod",
      contexts: {
        prod: { url: "https://vnm.example.com/", token: "prod-token", issuer: "https://vnm.example.com" },
        lab: { url: "http://lab:8080", token: "lab-token", issuer: "http://lab:8080" },
        fresh: { url: "http://fresh:8080" },
      },
    });
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    for (const [k, v] of [["XDG_CONFIG_HOME", saved.xdg], ["VNM_URL", saved.url]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("sends a context's token to the gateway that issued it, however its URL is spelled", () => {
    expect(target({})).toEqual({ url: "https://vnm.example.com", token: "prod-token", context: "prod" });
    expect(target({ url: "https://VNM.example.com:443/" }).token).toBe("prod-token");
    expect(target({ context: "lab" })).toEqual({ url: "http://lab:8080", token: "lab-token", context: "lab" });
  });

  it("sends another gateway the token it issued itself, or none", () => {
    expect(target({ url: "http://lab:8080" }).token).toBe("lab-token");
    expect(target({ url: "http://lab:8081" }).token).toBeUndefined();
    expect(target({ url: "https://evil.example.com" }).token).toBeUndefined();
    process.env["VNM_URL"] = "http://vnm.example.com"; // http, not https: another gateway
    expect(target({}).token).toBeUndefined();
    expect(target({ context: "fresh" }).token).toBeUndefined();
    expect(normalUrl("HTTP://Lab:80/api/")).toBe("http://lab/api");
    expect(() => target({ context: "nope" })).toThrow(/no context named nope/);
  });

  it("reads the single login of earlier versions as a context named default", () => {
    mkdirSync(join(dir, "vnm"), { recursive: true });
    writeFileSync(join(dir, "vnm", "config.json"), JSON.stringify({ url: "http://old:8080", token: "old-token" }));
    expect(loadConfig()).toEqual({ current: "default", contexts: { default: { url: "http://old:8080", token: "old-token", issuer: "http://old:8080" } } });
    expect(target({ url: "http://other:8080" }).token).toBeUndefined();
  });

  it("names a config file that is not the CLI's (exit 2), and keeps only a context's text members", () => {
    mkdirSync(join(dir, "vnm"), { recursive: true });
    const file = join(dir, "vnm", "config.json");
    for (const [text, says] of [["[]", /config\.json is not a JSON object/], ['{"contexts": 7}', /config\.json: contexts is not a JSON object/]] as const) {
      writeFileSync(file, text);
      expect(() => loadConfig(), text).toThrow(expect.objectContaining({ exitCode: 2, message: expect.stringMatching(says) }));
    }
    writeFileSync(file, JSON.stringify({ current: "lab", contexts: { lab: { url: 8080, token: "lab-token", user: ["ann"] } } }));
    expect(loadConfig()).toEqual({ current: "lab", contexts: { lab: { token: "lab-token" } } });
  });
});
