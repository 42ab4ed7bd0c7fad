// GitHub's own workflow parser and expression evaluator (@actions/workflow-parser and
// @actions/expressions, from actions/languageservices) behind a JSON-lines pipe, for the Actions
// model in ghsim/actions/model.py. Bundled to CommonJS by esbuild (scripts/test.sh): their ESM
// build imports JSON without an import attribute, which node 20 refuses.
//
// Requests, one JSON object a line on stdin; one answer a line on stdout:
//   {"op": "parse", "name": "farm.yml", "content": "..."}
//     -> {"errors": [...], "raw": <token tree>, "template": <converted template>}
//   {"op": "eval", "expr": "...", "context": {...}, "status": {...}}
//     -> {"value": <JSON>} or {"error": "..."}
import { parseWorkflow, convertWorkflowTemplate, NoOperationTraceWriter } from "@actions/workflow-parser";
import { Evaluator, Lexer, Parser, data } from "@actions/expressions";
import readline from "node:readline";

const CONTEXTS = ["github", "env", "vars", "secrets", "inputs", "needs", "matrix", "strategy",
  "steps", "runner", "job", "jobs"];
// the status functions GitHub adds for `if:`; the model passes the job's or step's status
const STATUS = ["success", "failure", "cancelled", "always"];
const cache = new Map();

function compile(expr) {
  let tree = cache.get(expr);
  if (tree === undefined) {
    const lexed = new Lexer(expr).lex();
    const funcs = [...STATUS, "hashFiles"].map((name) => ({ name, minArgs: 0, maxArgs: 255 }));
    tree = new Parser(lexed.tokens, CONTEXTS, funcs).parse();
    cache.set(expr, tree);
  }
  return tree;
}

function evaluate(expr, context, status) {
  const ctx = JSON.parse(JSON.stringify(context), data.reviver);
  const functions = new Map();
  for (const name of STATUS) {
    functions.set(name, { name, minArgs: 0, maxArgs: 0,
      call: () => new data.BooleanData(Boolean(status && status[name])) });
  }
  functions.set("hashFiles", { name: "hashFiles", minArgs: 1, maxArgs: 255,
    call: () => new data.StringData("0".repeat(64)) });
  const result = new Evaluator(compile(expr), ctx, functions).evaluate();
  return JSON.parse(JSON.stringify(result, data.replacer));
}

async function parse(name, content) {
  const parsed = parseWorkflow({ name, content }, new NoOperationTraceWriter());
  let template = null;
  if (parsed.value !== undefined) {
    template = await convertWorkflowTemplate(parsed.context, parsed.value);
  }
  const errors = parsed.context.errors.getErrors().map((e) => e.message);
  return { errors, raw: JSON.parse(JSON.stringify(parsed.value ?? null)),
    template: JSON.parse(JSON.stringify(template)) };
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
  let answer;
  try {
    const req = JSON.parse(line);
    if (req.op === "parse") answer = await parse(req.name, req.content);
    else if (req.op === "eval") answer = { value: evaluate(req.expr, req.context, req.status) };
    else answer = { error: `unknown op ${req.op}` };
  } catch (exc) {
    answer = { error: String(exc && exc.message ? exc.message : exc) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
  }
}

main();
