// Validate glTF files with the Khronos glTF Validator (npm package gltf-validator).
// usage: node validate_gltf.mjs VALIDATOR_MODULE_DIR FILE...   → one JSON report per file on stdout (a JSON list)
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

const [moduleDir, ...files] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(moduleDir), "noop.js"));
const validator = require("gltf-validator");
const reports = [];
for (const file of files) {
  const data = new Uint8Array(await readFile(file));
  const report = await validator.validateBytes(data, {
    uri: path.basename(file),
    maxIssues: 0,
    externalResourceFunction: (uri) =>
      readFile(path.resolve(path.dirname(file), decodeURIComponent(uri))).then((b) => new Uint8Array(b)),
  });
  reports.push({ file, issues: report.issues, info: report.info });
}
process.stdout.write(JSON.stringify(reports));
