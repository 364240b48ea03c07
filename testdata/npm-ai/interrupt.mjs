// Double-texting through the UI message stream, with the AI SDK's DefaultChatTransport and
// readUIMessageStream: a first turn creates the chat's thread, whose default if_busy is then set
// to MODE (interrupt or rollback); a second turn streams a story, and once its text shows, a
// third message is sent. Prints both answers and the thread's messages as JSON.
// Usage: node interrupt.mjs NPM_DIR BASE_URL API_KEY AGENT CHAT_ID MODE
import { createRequire } from "node:module";
import path from "node:path";

const [npmDir, baseURL, apiKey, agent, chatId, mode] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { DefaultChatTransport, readUIMessageStream } = await import(require.resolve("ai"));

const headers = { Authorization: `Bearer ${apiKey}` };
const transport = new DefaultChatTransport({ api: `${baseURL}/api/agents/${agent}/chat`, headers });
const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });
const summary = (m) => ({ id: m.id, texts: m.parts.filter((p) => p.type === "text").map((p) => p.text), metadata: m.metadata });
const send = (messages) => transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined });
async function last(stream) {
  let msg;
  for await (const m of readUIMessageStream({ stream })) msg = m;
  return msg;
}

const messages = [user("u1", "hello")];
messages.push(await last(await send([...messages])));
const threads = await (await fetch(`${baseURL}/api/threads`, { headers })).json();
const thread = threads.items[0].id;
const patched = await fetch(`${baseURL}/api/threads/${thread}`, {
  method: "PATCH", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify({ if_busy: mode }),
});
if (!patched.ok) throw new Error(`PATCH: ${patched.status} ${await patched.text()}`);

messages.push(user("u2", "tell a story"));
let story, third;
for await (const m of readUIMessageStream({ stream: await send([...messages]) })) {
  story = m;
  if (!third && m.parts.some((p) => p.type === "text" && p.text.includes("Once"))) {
    third = send([...messages, user("u3", "a haiku please")]).then(last);
  }
}
const answer = await third;
const rows = await (await fetch(`${baseURL}/api/threads/${thread}/messages`, { headers })).json();
console.log(JSON.stringify({ story: summary(story), third: summary(answer), rows: rows.items.map((r) => r.role + ": " + (r.content ?? "")) }));
