import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { findConfigPath } from "../../src/config/findConfigPath.js";
import { loadConfig } from "../../src/config/loadConfig.js";
import { ErrorCode } from "../../src/model/errors.js";
import { createLogger } from "../../src/log/logger.js";
import { useTempDir } from "../helpers/tempDir.js";
import { rejection } from "../helpers/rejection.js";

const temp = useTempDir({ prefix: "abridge-config-" });
let cwd: string;
let home: string;
let xdg: string;

async function put(file: string, text: string): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

beforeEach(async () => {
  cwd = path.join(temp.path, "project");
  home = path.join(temp.path, "home");
  xdg = path.join(temp.path, "xdg");
  await mkdir(cwd, { recursive: true });
  await mkdir(home, { recursive: true });
});

describe("findConfigPath", () => {
  it("prefers --config, then $ABRIDGE_CONFIG, then ./abridge.toml, then the XDG folder", async () => {
    const fromFlag = await put(path.join(temp.path, "flag.toml"), "");
    const fromEnv = await put(path.join(temp.path, "env.toml"), "");
    const local = await put(path.join(cwd, "abridge.toml"), "");
    const inXdg = await put(path.join(xdg, "abridge", "abridge.toml"), "");
    const env = { ABRIDGE_CONFIG: fromEnv, XDG_CONFIG_HOME: xdg, HOME: home };

    expect(await findConfigPath({ configPath: "../flag.toml", cwd, env })).toBe(fromFlag);
    expect(await findConfigPath({ cwd, env })).toBe(fromEnv);
    expect(await findConfigPath({ cwd, env: { ...env, ABRIDGE_CONFIG: undefined } })).toBe(local);
    await rm(local);
    expect(await findConfigPath({ cwd, env: { ...env, ABRIDGE_CONFIG: "" } })).toBe(inXdg);
  });

  it("falls back to ~/.config when XDG_CONFIG_HOME is unset or relative", async () => {
    const file = await put(path.join(home, ".config", "abridge", "abridge.toml"), "");
    expect(await findConfigPath({ cwd, env: { HOME: home } })).toBe(file);
    expect(await findConfigPath({ cwd, env: { HOME: home, XDG_CONFIG_HOME: "relative/dir" } })).toBe(file);
  });

  it("names an explicit path that does not exist instead of falling back", async () => {
    await put(path.join(cwd, "abridge.toml"), "");
    const flag = await rejection(findConfigPath({ configPath: "missing.toml", cwd, env: {} }));
    expect(flag.code).toBe(ErrorCode.CONFIG_NOT_FOUND);
    expect(flag.message).toBe(`config file ${path.join(cwd, "missing.toml")} (from --config) does not exist`);

    const fromEnv = await rejection(findConfigPath({ cwd, env: { ABRIDGE_CONFIG: path.join(temp.path, "nope.toml") } }));
    expect(fromEnv.code).toBe(ErrorCode.CONFIG_NOT_FOUND);
    expect(fromEnv.message).toContain(path.join(temp.path, "nope.toml"));
    expect(fromEnv.message).toContain("$ABRIDGE_CONFIG");

    const dir = await rejection(findConfigPath({ configPath: temp.path, cwd, env: {} }));
    expect(dir.message).toContain("is a directory");
  });

  it("lists every place searched when nothing is found, and suggests the example only where it is", async () => {
    const error = await rejection(findConfigPath({ cwd, env: { HOME: home, XDG_CONFIG_HOME: xdg } }));
    expect(error.code).toBe(ErrorCode.CONFIG_NOT_FOUND);
    expect(error.message).toContain(path.join(cwd, "abridge.toml"));
    expect(error.message).toContain(path.join(xdg, "abridge", "abridge.toml"));
    expect(error.message).not.toContain("examples/abridge.toml");
    expect(error.details?.["searched"]).toEqual([path.join(cwd, "abridge.toml"), path.join(xdg, "abridge", "abridge.toml")]);

    await put(path.join(cwd, "examples", "abridge.toml"), "");
    const withExample = await rejection(findConfigPath({ cwd, env: { HOME: home, XDG_CONFIG_HOME: xdg } }));
    expect(withExample.message).toContain("--config examples/abridge.toml");
  });
});

describe("loadConfig", () => {
  it("loads the found file, shows it relative to cwd in errors, and resolves paths against it", async () => {
    await put(path.join(cwd, "conf", "abridge.toml"), '[servers.a]\ncommand = "x"\ncwd = "work"\n');
    const config = await loadConfig({ configPath: "conf/abridge.toml", cwd, env: {} });
    expect(config.source).toBe(path.join(cwd, "conf", "abridge.toml"));
    expect(config.servers[0]?.cwd).toBe(path.join(cwd, "conf", "work"));

    await put(path.join(cwd, "conf", "abridge.toml"), "mode = 1\n");
    const error = await rejection(loadConfig({ configPath: "conf/abridge.toml", cwd, env: {} }));
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message).toBe(`${path.join("conf", "abridge.toml")}: mode: expected one of "full", "summary", "compact", "lazy", "auto", "code", got 1`);
  });

  it("reads an mcp.json named by $ABRIDGE_CONFIG and logs a warning for envFile", async () => {
    const file = await put(path.join(temp.path, "mcp.json"), JSON.stringify({ servers: { a: { command: "x", envFile: ".env" } } }));
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", sink: (line) => lines.push(line) });
    const config = await loadConfig({ cwd, env: { ABRIDGE_CONFIG: file }, logger });
    expect(config.servers.map((s) => s.name)).toEqual(["a"]);
    expect(lines.join("\n")).toContain("envFile is not read by abridge");
  });

  it("stops with CANCELLED when the signal has fired", async () => {
    await put(path.join(cwd, "abridge.toml"), "");
    const controller = new AbortController();
    controller.abort();
    const error = await rejection(loadConfig({ cwd, env: {}, signal: controller.signal }));
    expect(error.code).toBe(ErrorCode.CANCELLED);
  });
});
