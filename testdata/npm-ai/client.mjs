// Drives weft serve's UI message stream with the AI SDK's DefaultChatTransport and
// readUIMessageStream (what useChat does), and prints what it saw as JSON.
// Usage: node client.mjs NPM_DIR BASE_URL API_KEY AGENT CHAT_ID
import { createRequire } from "node:module";
import path from "node:path";

const [npmDir, baseURL, apiKey, agent, chatId] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { DefaultChatTransport, readUIMessageStream } = await import(require.resolve("ai"));

const transport = new DefaultChatTransport({
  api: `${baseURL}/api/agents/${agent}/chat`,
  headers: { Authorization: `Bearer ${apiKey}` },
});

const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });
const summary = (m) => ({
  id: m.id,
  role: m.role,
  texts: m.parts.filter((p) => p.type === "text").map((p) => p.text),
  reasoning: m.parts.filter((p) => p.type === "reasoning").map((p) => p.text),
  tools: m.parts.filter((p) => p.type === "dynamic-tool").map((p) => ({ name: p.toolName, state: p.state, input: p.input, output: p.output })),
  steps: m.parts.filter((p) => p.type === "step-start").length,
  metadata: m.metadata,
});
async function last(stream) {
  let msg;
  for await (const m of readUIMessageStream({ stream })) msg = m;
  return msg;
}

const out = {};
const messages = [user("u1", "hello")];
// Turn 1.
const a1 = await last(await transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined }));
out.first = summary(a1);
messages.push(a1, user("u2", "and again"));
// Turn 2: the whole history is sent, as useChat sends it.
const a2 = await last(await transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined }));
out.second = summary(a2);
messages.push(a2, user("u3", "a third time"));

// Turn 3: the connection drops after the first text, and the client reconnects.
const abort = new AbortController();
const stream = await transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: abort.signal });
const reader = stream.getReader();
const before = [];
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  before.push(value.type);
  if (value.type === "text-delta") break;
}
abort.abort();
await reader.cancel().catch(() => {});
const resumed = await transport.reconnectToStream({ chatId });
out.dropped = { before };
out.resumed = resumed ? summary(await last(resumed)) : null;
// Once the turn is over there is nothing to resume.
out.afterwards = (await transport.reconnectToStream({ chatId })) === null ? "none" : "a stream";
console.log(JSON.stringify(out));
