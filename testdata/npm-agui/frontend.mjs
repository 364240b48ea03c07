// Drives a frontend tool through weft serve's AG-UI endpoint with @ag-ui/client's HttpAgent: the
// first run passes the client's confirm tool and ends with the agent's call of it pending; the
// client runs the tool, adds its tool message and runs the agent again, which answers with the
// result. Prints what it saw as JSON.
// Usage: node frontend.mjs NPM_DIR BASE_URL API_KEY AGENT THREAD_ID
import { agentFromArgs, summary } from "./agent.mjs";

const confirm = {
  name: "confirm",
  description: "Ask the user to confirm something",
  parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};
// The tool itself, run here in the client.
const tools = { confirm: ({ question }) => `yes: ${question}` };

const agent = await agentFromArgs("Ship order 42");
const out = { runs: [] };
for (const runId of ["r1", "r2"]) {
  const types = [];
  let pending = [];
  const r = await agent.runAgent({ runId, tools: [confirm] }, {
    onEvent: ({ event }) => { types.push(event.type); },
    onRunFinishedEvent: (p) => { pending = p.pendingToolCallIds ?? []; },
  });
  out.runs.push({ types, result: r.result, pending });
  for (const id of pending) {
    const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === id);
    const content = tools[call.function.name](JSON.parse(call.function.arguments));
    agent.addMessage({ id: `result-${id}`, role: "tool", toolCallId: id, content });
  }
}
out.messages = agent.messages.map(summary);
out.state = agent.state;
console.log(JSON.stringify(out));
