// Double-texting through AG-UI with @ag-ui/client's HttpAgent: a first run creates the thread,
// whose default if_busy is then set to MODE (interrupt or rollback); a second run streams a
// story, and once its text shows, a second HttpAgent on the same threadId runs a third message.
// Prints what the interrupted run ended with and the messages each agent holds as JSON.
// Usage: node interrupt.mjs NPM_DIR BASE_URL API_KEY AGENT THREAD_ID MODE
import { createRequire } from "node:module";
import path from "node:path";
import { summary } from "./agent.mjs";

const [npmDir, baseURL, apiKey, agentName, threadId, mode] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { HttpAgent } = await import(require.resolve("@ag-ui/client"));
const headers = { Authorization: `Bearer ${apiKey}` };
const newAgent = (messages) => new HttpAgent({ url: `${baseURL}/api/agents/${agentName}/ag-ui`, headers, threadId, initialMessages: messages });

const agent = newAgent([{ id: "u1", role: "user", content: "hello" }]);
await agent.runAgent({ runId: "r1" });
const threads = await (await fetch(`${baseURL}/api/threads`, { headers })).json();
const thread = threads.items[0].id;
const patched = await fetch(`${baseURL}/api/threads/${thread}`, {
  method: "PATCH", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify({ if_busy: mode }),
});
if (!patched.ok) throw new Error(`PATCH: ${patched.status} ${await patched.text()}`);

agent.addMessage({ id: "u2", role: "user", content: "tell a story" });
const types = [];
let text = "", other, third, custom, finished, snapshot;
await agent.runAgent({ runId: "r2" }, {
  onEvent: ({ event }) => {
    types.push(event.type);
    if (event.type === "TEXT_MESSAGE_CONTENT") text += event.delta;
    if (event.type === "CUSTOM") custom = { name: event.name, value: event.value };
    if (event.type === "RUN_FINISHED") finished = { outcome: event.outcome ?? null, result: event.result ?? null };
    if (event.type === "MESSAGES_SNAPSHOT") snapshot = event.messages.map(summary);
    if (!other && text.includes("Once")) {
      other = newAgent([...agent.messages.filter((m) => m.role === "user"), { id: "u3", role: "user", content: "a haiku please" }]);
      third = other.runAgent({ runId: "r3" });
    }
  },
});
const r3 = await third;
console.log(JSON.stringify({
  types: [...new Set(types)], custom, finished, snapshot,
  messages: agent.messages.map(summary), third: r3.newMessages.map(summary),
}));
