import { writeLine } from "../cliIo.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { jsonObjectArgument, positiveIntOption } from "../usageError.js";
import { NATS_SECURITY_OPTIONS, natsAgentFrom, natsSecurityFrom } from "./natsOptions.js";
import { BusCallError, BusClient } from "../../bus/client/busClient.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { DEFAULT_REQUEST_TIMEOUT_MS } from "../../bus/wire/busProtocol.js";

/** `abridge bus call`: one call to an agent's workers over the bus, as a host sends it. */
export const busCallCommand: CommandSpec = {
  path: ["bus", "call"],
  summary: "Call one tool of an agent over the NATS bus and print its result as JSON (exit 1 on a bus error or a tool error)",
  args: "<tool> [json-args]",
  positionals: { min: 1, max: 2 },
  details: [
    "Sends the call on tool.invoke.mcp.<agent>, marked Content-Trust: tool-request, and waits for one worker of the agent.",
    "<tool> is the name as the agent's list shows it (<server>_<tool>). A bus error is printed with its code,",
    "e.g. unavailable when no worker of the agent is on the bus, busy when its workers are at their limit, timeout when",
    "none answered within --timeout-ms.",
  ].join("\n"),
  options: {
    nats: { type: "string", value: "URL", description: "The NATS server, nats://HOST:PORT (required)" },
    agent: { type: "string", value: "NAME", description: "The agent whose workers take the call (required)" },
    "timeout-ms": { type: "string", value: "MS", description: `How long to wait for an answer (default ${DEFAULT_REQUEST_TIMEOUT_MS})` },
    "inbox-prefix": {
      type: "string",
      value: "PREFIX",
      description: "Subject prefix of the reply inbox (default _INBOX), e.g. _INBOX.alpha for a user allowed only that",
    },
    ...NATS_SECURITY_OPTIONS,
  },
  async run(ctx) {
    const { natsText, agent } = natsAgentFrom(ctx.values, ctx.secrets, "the agent whose workers take the call");
    const [tool, argsText] = ctx.positionals as [string, string | undefined];
    const args = jsonObjectArgument(argsText, "arguments");
    const timeoutMs = positiveIntOption(ctx.values, "timeout-ms") ?? DEFAULT_REQUEST_TIMEOUT_MS;

    const inboxPrefix = ctx.values["inbox-prefix"];
    const client = await BusClient.connect({
      nats: natsText,
      timeoutMs,
      name: "abridge-bus-call",
      logger: ctx.logger,
      ...natsSecurityFrom(ctx.values),
      ...(typeof inboxPrefix === "string" ? { inboxPrefix } : {}),
    });
    try {
      const result = await client.callTool(agent, tool, args, { signal: ctx.io.signal });
      writeLine(ctx.io.stdout, JSON.stringify(result, null, 2));
      return result.isError === true ? ExitCode.FAILURE : ExitCode.OK;
    } catch (err) {
      if (!(err instanceof BusCallError)) throw err;
      const from = err.worker !== undefined ? ` from worker ${err.worker}` : "";
      throw new AbridgeError(ErrorCode.BUS_CALL_FAILED, `bus error ${err.busCode}${err.retryable ? " (retryable)" : ""}${from}: ${err.message}`, {
        retryable: err.retryable,
        cause: err,
      });
    } finally {
      await client.close();
    }
  },
};
