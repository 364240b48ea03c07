// An MCP client written with the official TypeScript SDK (not Weft's code, not the Go SDK): it
// starts `weft mcp` on stdio, initializes, lists the tools, calls one with a progress token and
// prints what it saw as one JSON document. Usage: node client.mjs NPM_DIR TOOL ARGS_JSON -- CMD ARGS...
import path from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, tool, argsJSON, sep, command, ...commandArgs] = process.argv.slice(2);
if (sep !== "--") {
  console.error("usage: node client.mjs NPM_DIR TOOL ARGS_JSON -- CMD ARGS...");
  process.exit(2);
}
const sdk = (p) => import(pathToFileURL(path.join(npmDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const client = new Client({ name: "npm-test-client", version: "1.0.0" });
const transport = new StdioClientTransport({ command, args: commandArgs, stderr: "inherit" });
await client.connect(transport);
const server = client.getServerVersion();
const { tools } = await client.listTools();
const progress = [];
const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) }, undefined, {
  onprogress: (p) => progress.push(p.message ?? String(p.progress)),
  timeout: 30000,
});
console.log(JSON.stringify({ server, tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })), result, progress }));
await client.close();
