import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The TypeScript compiler of the repository's dev dependencies. */
const TSC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../node_modules/typescript/bin/tsc");

/** One compiler diagnostic. */
export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  code: number;
  message: string;
}

/** What one compiler run said. */
export interface TypecheckResult {
  exitCode: number;
  diagnostics: Diagnostic[];
  /** Everything it printed, for failure messages. */
  output: string;
}

/**
 * Type-checks `files` (name → source, plain `.ts` scripts) in a fresh temp dir with one `tsc`
 * run: strict, no lib checks skipped, only the ES2023 library (no DOM, no @types).
 */
export async function typecheck(files: Record<string, string>): Promise<TypecheckResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-typecheck-"));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
    const config = {
      compilerOptions: { strict: true, noEmit: true, target: "es2022", lib: ["es2023"], types: [], skipLibCheck: false, noUncheckedIndexedAccess: true },
      files: Object.keys(files),
    };
    await writeFile(path.join(dir, "tsconfig.json"), JSON.stringify(config));
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
      execFile(process.execPath, [TSC, "-p", path.join(dir, "tsconfig.json"), "--pretty", "false"], { maxBuffer: 64 * 1024 * 1024 }, (err, out, errOut) => {
        if (err !== null && typeof err.code !== "number") reject(err);
        else resolve({ code: err === null ? 0 : (err.code as number), stdout: out, stderr: errOut });
      });
    });
    const output = `${stdout}${stderr}`;
    const diagnostics = [...output.matchAll(/^(.+?)\((\d+),(\d+)\): error TS(\d+): (.*)$/gm)].map((m) => ({
      file: path.basename(m[1] as string),
      line: Number(m[2]),
      column: Number(m[3]),
      code: Number(m[4]),
      message: m[5] as string,
    }));
    return { exitCode: code, diagnostics, output };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
