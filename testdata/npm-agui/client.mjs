// Drives weft serve's AG-UI endpoint with @ag-ui/client's HttpAgent (which checks the event
// order as it applies the events) and prints what it saw as JSON.
// Usage: node client.mjs NPM_DIR BASE_URL API_KEY AGENT THREAD_ID
import { createRequire } from "node:module";
import path from "node:path";

const [npmDir, baseURL, apiKey, agentName, threadId] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { HttpAgent } = await import(require.resolve("@ag-ui/client"));

const agent = new HttpAgent({
  url: `${baseURL}/api/agents/${agentName}/ag-ui`,
  headers: { Authorization: `Bearer ${apiKey}` },
  threadId,
  initialMessages: [{ id: "u1", role: "user", content: "hello" }],
});
const summary = (m) => ({ role: m.role, content: m.content, toolCalls: (m.toolCalls ?? []).map((c) => c.function.name + " " + c.function.arguments), toolCallId: m.toolCallId });
const out = { turns: [] };
for (const [runId, next] of [["r1", "and again"], ["r2", null]]) {
  const types = [];
  const r = await agent.runAgent({ runId }, { onEvent: ({ event }) => { types.push(event.type); } });
  out.turns.push({ types, result: r.result, newMessages: r.newMessages.map(summary) });
  if (next) agent.addMessage({ id: "u2", role: "user", content: next });
}
out.messages = agent.messages.map(summary);
// A run the server refuses (nothing new: the last message is the agent's) fails the client's run.
try {
  await agent.runAgent({ runId: "r3" });
  out.refused = "no error";
} catch (e) {
  out.refused = String(e.message ?? e).slice(0, 200);
}
console.log(JSON.stringify(out));
