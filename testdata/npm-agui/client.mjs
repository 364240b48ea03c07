// Drives weft serve's AG-UI endpoint with @ag-ui/client's HttpAgent (which checks the event
// order as it applies the events) and prints what it saw as JSON.
// Usage: node client.mjs NPM_DIR BASE_URL API_KEY AGENT THREAD_ID
import { agentFromArgs, summary } from "./agent.mjs";

const agent = await agentFromArgs("hello");
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
