// Regenerating an answer with the AI SDK's DefaultChatTransport, as useChat's regenerate() sends
// it: two turns, then trigger "regenerate-message" naming the second answer (the messages up to
// the user's second), then a third turn. Prints the answers as JSON.
// Usage: node regenerate.mjs NPM_DIR BASE_URL API_KEY AGENT CHAT_ID
import { createRequire } from "node:module";
import path from "node:path";

const [npmDir, baseURL, apiKey, agent, chatId] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { DefaultChatTransport, readUIMessageStream } = await import(require.resolve("ai"));
const transport = new DefaultChatTransport({ api: `${baseURL}/api/agents/${agent}/chat`, headers: { Authorization: `Bearer ${apiKey}` } });
const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });
const summary = (m) => ({ id: m.id, texts: m.parts.filter((p) => p.type === "text").map((p) => p.text), stop: m.metadata?.weftStopReason });
async function send(messages, trigger = "submit-message", messageId = undefined) {
  let msg;
  const stream = await transport.sendMessages({ chatId, messages, trigger, messageId, abortSignal: undefined });
  for await (const m of readUIMessageStream({ stream })) msg = m;
  return msg;
}

const messages = [user("u1", "one")];
messages.push(await send([...messages]), user("u2", "two"));
const second = await send([...messages]);
// regenerate(): the answer is dropped from the client's messages, and named by messageId.
const again = await send([...messages], "regenerate-message", second.id);
messages.push(again, user("u3", "three"));
const third = await send([...messages]);
console.log(JSON.stringify({ second: summary(second), again: summary(again), third: summary(third) }));
