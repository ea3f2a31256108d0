import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import type { CallToolResult } from "../../src/model/types.js";
import { SHAPED_META_KEY } from "../../src/result/shapeResult.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

const rows = Array.from({ length: 12 }, (_, i) => ({ id: i + 1, name: `entity-${i + 1}`, kind: i % 2 === 0 ? "person" : "project", note: null }));
const pretty = JSON.stringify({ rows }, null, 2);
const compact = `{"rows":{"@columns":["id","name","kind","note"],"@rows":[${rows.map((r) => `[${r.id},"${r.name}","${r.kind}",null]`).join(",")}]}}`;

const textOf = (result: CallToolResult): string => (result.content?.[0] as { text: string }).text;

describe("result shaping on the bridge's call pipeline", () => {
  it("compact by default: the upstream's pretty JSON reaches the client minified, as a table, marked in _meta", async () => {
    const { bridge } = await startBridge(fixtureToml("e", "echoServer.ts"));
    const result = await bridge.callTool("e_echo", { text: pretty });
    expect(textOf(result)).toBe(compact);
    expect(result._meta).toMatchObject({ [SHAPED_META_KEY]: { format: "compact", blocks: [0] }, "abridge/trust": "untrusted-tool-output" });
    const plain = await bridge.callTool("e_echo", { text: "not JSON" });
    expect(textOf(plain)).toBe("not JSON");
    expect(plain._meta).not.toHaveProperty(SHAPED_META_KEY);
  });

  it("as-is on a server passes the upstream's bytes; result_format_tools overrides per tool", async () => {
    const toml = [
      `result_format = "as-is"`,
      fixtureToml("e", "echoServer.ts"),
      fixtureToml("l", "echoServer.ts", [], [`result_format = "compact"`, `[servers.l.result_format_tools]`, `"ec*" = "lean"`]),
    ].join("\n");
    const { bridge } = await startBridge(toml);
    expect(textOf(await bridge.callTool("e_echo", { text: pretty }))).toBe(pretty);
    const lean = await bridge.callTool("l_echo", { text: pretty });
    expect(textOf(lean)).toBe(`{"rows":{"@columns":["id","name","kind"],"@rows":[${rows.map((r) => `[${r.id},"${r.name}","${r.kind}"]`).join(",")}]}}`);
    expect((lean.content?.[1] as { text: string }).text).toBe(`[abridge: result_format "lean": ${rows.length} null or empty fields left out]`);
  });

  it("a reload that changes only result_format takes effect on the next call, without reconnecting the server", async () => {
    const toml = fixtureToml("e", "echoServer.ts");
    const { bridge, dir, pids } = await startBridge(toml);
    expect(textOf(await bridge.callTool("e_echo", { text: pretty }))).toBe(compact);
    const before = pids();
    const edited = parseConfigText(fixtureToml("e", "echoServer.ts", [], [`result_format = "as-is"`]), { file: path.join(dir, "abridge.toml"), env: {} });
    const applied = await bridge.applyConfig(edited);
    expect(applied).toMatchObject({ changed: [], updated: ["e"] });
    expect(textOf(await bridge.callTool("e_echo", { text: pretty }))).toBe(pretty);
    expect(pids()).toEqual(before);
  });

  it("a program's calls in code mode read the upstream's values, not the table form", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${fixtureToml("e", "echoServer.ts")}`);
    const code = `const r = await tools.call("e_echo", { text: ${JSON.stringify(pretty)} });\nreturn r.rows.length + ":" + r.rows[0].name;`;
    const answer = await bridge.callTool("run_code", { code });
    expect(answer.isError).toBeUndefined();
    expect(textOf(answer)).toContain('"12:entity-1"');
  });

  it("the output limit counts what is sent: a result whose pretty form is over max_output_bytes and whose compact form fits is passed whole", async () => {
    const limit = 900;
    expect(Buffer.byteLength(pretty)).toBeGreaterThan(limit);
    expect(Buffer.byteLength(compact) + 200).toBeLessThan(limit);
    const toml = [
      fixtureToml("c", "echoServer.ts", [], [`max_output_bytes = ${limit}`]),
      fixtureToml("a", "echoServer.ts", [], [`max_output_bytes = ${limit}`, `result_format = "as-is"`]),
    ].join("\n");
    const { bridge } = await startBridge(toml);
    const shaped = await bridge.callTool("c_echo", { text: pretty });
    expect(shaped.content).toHaveLength(1);
    expect(textOf(shaped)).toBe(compact);
    const cut = await bridge.callTool("a_echo", { text: pretty });
    expect((cut.content?.at(-1) as { text: string }).text).toMatch(/^\[abridge: output cut/);
  });

  it("a spilled result keeps the shaped text: read_output pages through what the model saw the head of", async () => {
    const limit = 400;
    expect(Buffer.byteLength(compact)).toBeGreaterThan(limit);
    expect(Buffer.byteLength(pretty)).toBeLessThanOrEqual(limit * 4);
    const { bridge } = await startBridge(fixtureToml("s", "echoServer.ts", [], [`max_output_bytes = ${limit}`, "spill = true"]));
    const cut = await bridge.callTool("s_echo", { text: pretty });
    const marker = (cut.content?.at(-1) as { text: string }).text;
    let next = JSON.parse(/read_output with (\{.*?\})/.exec(marker)![1]!) as { handle: string; offset: number };
    let text = "";
    for (let page = 0; page < 20; page++) {
      const blocks = (await bridge.callTool("read_output", next)).content as { text: string }[];
      text += blocks[0]!.text;
      const more = /read_output with (\{.*?\})/.exec(blocks[1]!.text);
      if (!more) break;
      next = JSON.parse(more[1]!) as typeof next;
    }
    expect(text).toBe(compact);
  });
});
