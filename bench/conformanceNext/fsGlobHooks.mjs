/** Resolve hook of fsGlob.mjs: `fs` imported from the conformance package is fsWithGlob.mjs. */
const SHIM = new URL("./fsWithGlob.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/conformance-next/")) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
