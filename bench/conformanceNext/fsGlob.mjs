/**
 * `node --import ./fsGlob.mjs`: lets the conformance suite's 0.2 alpha run on Node 20. It imports
 * `globSync` from `fs`, which Node adds in 22; named imports of a built-in module are fixed when it
 * is linked, so patching `fs` is not enough. A resolve hook sends that package's `fs` import to
 * fsWithGlob.mjs, which re-exports `fs` and adds a `globSync` for the patterns it uses.
 */
import { register } from "node:module";

register("./fsGlobHooks.mjs", import.meta.url);
