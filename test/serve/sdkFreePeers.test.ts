import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { connectRawStdio } from "../../bench/rawStdioClient.js";
import type { Connected } from "../../bench/mcpTarget.js";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { useTempDir } from "../helpers/tempDir.js";

const RAW_ECHO = path.resolve(import.meta.dirname, "../fixtures/rawEchoServer.ts");

/**
 * abridge between two peers that speak MCP as plain JSON lines, with no SDK on either side: the
 * pair the benchmark uses to show abridge's own share of a call.
 */
describe("serve between SDK-free peers", () => {
  const temp = useTempDir({ prefix: "abridge-raw-peers-" });
  let client: Connected | undefined;

  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  it("lists and calls the raw echo through serve for a raw client, concurrent calls matched by id", async () => {
    const config = path.join(temp.path, "abridge.toml");
    const echo = abridgeCommand([]);
    await writeFile(
      config,
      `mode = "compact"\n[servers.echo]\ncommand = ${JSON.stringify(echo.command)}\nargs = ${JSON.stringify([echo.args[0], echo.args[1], RAW_ECHO])}\n`,
    );
    const serve = abridgeCommand(["serve", "--config", config, "--cache-dir", temp.path, "--no-watch"]);
    client = await connectRawStdio(serve.command, serve.args);
    expect(await client.listTools()).toBe(2);
    const texts = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const result = (await client!.call("echo_echo", { text: `call ${i}` })) as { content: Array<{ text: string }> };
        return result.content[0]?.text;
      }),
    );
    expect(texts).toEqual(Array.from({ length: 20 }, (_, i) => `call ${i}`));
    await expect(client.call("echo_echo", {})).resolves.toMatchObject({ isError: true });
  });
});
