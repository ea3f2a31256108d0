import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { summarySchema } from "../../src/config/schema.js";
import { AbridgeError, ErrorCode, messageOf } from "../../src/model/errors.js";
import { createSummarizer, PLACEHOLDER_API_KEY } from "../../src/summarize/createSummarizer.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import { parsePrompt } from "../../src/summarize/loadPrompt.js";
import { OpenAiSummarizer } from "../../src/summarize/openAiSummarizer.js";
import { startFakeOpenAi } from "../helpers/fakeOpenAi.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { loadCorpusTools } from "./corpus.js";
import { inputsOf } from "./queueFixtures.js";

const github = loadCorpusTools().filter((t) => t.server === "github");
let fake: FakeOpenAi | undefined;
let dirs: string[] = [];

afterEach(async () => {
  await fake?.close();
  fake = undefined;
  await Promise.allSettled(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  dirs = [];
});

describe("createSummarizer", () => {
  it("builds the extractive summarizer by default, with the configured word budget", () => {
    const s = createSummarizer(summarySchema.parse({ word_budget: 5 }), { env: {} });
    expect(s).toBeInstanceOf(ExtractiveSummarizer);
    expect(s.id).toBe("extractive@3");
    expect(s.promptId).toBe("none");
    const summary = (s as ExtractiveSummarizer).summarizeTool({
      name: "t",
      description: "Get a detailed listing of all files and directories in a path.",
      inputSchema: {},
    }).summary;
    expect(summary.split(" ").length).toBeLessThanOrEqual(5);
  });

  it("builds the OpenAI summarizer with the key from the named variable", async () => {
    fake = await startFakeOpenAi();
    const config = summarySchema.parse({
      summarizer: "openai",
      model: "small-model",
      base_url: fake.baseUrl,
      api_key_env: "MY_KEY",
      batch_size: 3,
    });
    const s = createSummarizer(config, { env: { MY_KEY: "secret-123" } });
    expect(s).toBeInstanceOf(OpenAiSummarizer);
    expect(s.id).toBe("openai:small-model");
    expect(s.promptId).toBe("summarize-tool@1");
    expect(s.maxBatch).toBe(3);
    const out = await s.summarize(inputsOf(github.slice(0, 1)));
    expect([...out.values()][0]?.ok).toBe(true);
    expect(fake.requests[0]?.authorization).toBe("Bearer secret-123");
    expect(fake.requests[0]?.body["model"]).toBe("small-model");
  });

  it("sends a placeholder key to a local endpoint when the variable is unset", async () => {
    fake = await startFakeOpenAi();
    const config = summarySchema.parse({ summarizer: "openai", base_url: fake.baseUrl });
    const s = createSummarizer(config, { env: {} });
    await s.summarize(inputsOf(github.slice(0, 1)));
    expect(fake.requests[0]?.authorization).toBe(`Bearer ${PLACEHOLDER_API_KEY}`);
  });

  it("refuses the OpenAI API without a key", () => {
    const config = summarySchema.parse({ summarizer: "openai" });
    let error: unknown;
    try {
      createSummarizer(config, { env: { OPENAI_API_KEY: "" } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AbridgeError);
    expect(error).toMatchObject({ code: ErrorCode.CONFIG_ENV_MISSING });
    expect(messageOf(error)).toContain("OPENAI_API_KEY");
  });

  it("reads the prompt id from the front matter of the prompts directory's file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-prompts-"));
    dirs.push(dir);
    await writeFile(path.join(dir, "summarize-tool.md"), "---\nid: custom\nversion: 7\n---\nSummarize tools.\n");
    const config = summarySchema.parse({ summarizer: "openai", base_url: "http://127.0.0.1:9/v1" });
    expect(createSummarizer(config, { env: {}, promptsDir: dir }).promptId).toBe("custom@7");

    const empty = await mkdtemp(path.join(os.tmpdir(), "abridge-prompts-"));
    dirs.push(empty);
    expect(() => createSummarizer(config, { env: {}, promptsDir: empty })).toThrowError(/cannot read prompt file/);
  });
});

describe("parsePrompt", () => {
  it("needs front matter with id and version", () => {
    expect(parsePrompt("---\nid: a\nversion: '2'\n---\nText")).toEqual({ id: "a", version: "2", promptId: "a@2", text: "Text" });
    expect(() => parsePrompt("no front matter")).toThrowError(/front matter/);
    expect(() => parsePrompt("---\nid: a\n---\nText")).toThrowError(/no version/);
    expect(() => parsePrompt("---\nid: a\nversion: 1\n---\n")).toThrowError(/no instructions/);
  });
});
