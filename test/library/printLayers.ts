/** `npm run layers`: prints the layer table of src/ and every import that breaks the layering. */
import { layerTable, layerViolations } from "./importGraph.js";

process.stdout.write(`${layerTable()}\n`);
const problems = layerViolations();
process.stdout.write(problems.length === 0 ? "\nlayering holds: no upward, sideways or under-the-core import\n" : `\n${problems.join("\n")}\n`);
process.exitCode = problems.length === 0 ? 0 : 1;
