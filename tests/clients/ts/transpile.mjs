// Strips the types from scenario.ts into build/scenario.js for node to run. The type check itself is
// `tsc --noEmit` (tests/e2e/test_generated_clients.py runs it first); this only transpiles one file.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import ts from "typescript";

const source = readFileSync(new URL("./scenario.ts", import.meta.url), "utf8");
const { outputText } = ts.transpileModule(source, {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  fileName: "scenario.ts",
});
mkdirSync(new URL("./build/", import.meta.url), { recursive: true });
writeFileSync(new URL("./build/scenario.js", import.meta.url), outputText);
