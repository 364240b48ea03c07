// Double-texting through /v1 with the official openai client: a first request creates a thread,
// whose default if_busy is then set to MODE (interrupt or rollback); a second, streamed, tells a
// story, and once its text shows a third message is sent on the thread. API is "chat" (chat
// completions, the thread named by the Weft-Thread-Id header) or "responses" (chained by
// previous_response_id). Prints how the story ended and the third answer as JSON.
// Usage: node interrupt.mjs NPM_DIR BASE_URL API_KEY AGENT API MODE
import { createRequire } from "node:module";
import path from "node:path";

const [npmDir, baseURL, apiKey, agent, api, mode] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { default: OpenAI } = await import(require.resolve("openai"));
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0 });
const headers = { Authorization: `Bearer ${apiKey}` };
async function setIfBusy(thread) {
  const r = await fetch(`${baseURL}/api/threads/${thread}`, {
    method: "PATCH", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify({ if_busy: mode }),
  });
  if (!r.ok) throw new Error(`PATCH: ${r.status} ${await r.text()}`);
}

const out = {};
if (api === "chat") {
  const { response } = await client.chat.completions.create({ model: agent, messages: [{ role: "user", content: "hello" }] }).withResponse();
  const thread = response.headers.get("weft-thread-id");
  await setIfBusy(thread);
  const on = { headers: { "Weft-Thread-Id": thread } };
  const stream = await client.chat.completions.create({ model: agent, messages: [{ role: "user", content: "tell a story" }], stream: true }, on);
  let text = "", third;
  for await (const c of stream) {
    const ch = c.choices[0];
    if (!ch) continue;
    text += ch.delta?.content ?? "";
    if (ch.finish_reason) out.finish = ch;
    if (!third && text.includes("Once")) {
      third = client.chat.completions.create({ model: agent, messages: [{ role: "user", content: "a haiku please" }] }, on);
    }
  }
  const answer = await third;
  out.third = { content: answer.choices[0].message.content, finish: answer.choices[0].finish_reason, stop: answer.choices[0].weft_stop_reason };
  out.thread = thread;
} else {
  const first = await client.responses.create({ model: agent, input: "hello" });
  await setIfBusy(first.conversation.id);
  const stream = await client.responses.create({ model: agent, input: "tell a story", previous_response_id: first.id, stream: true });
  let text = "", third, id;
  const types = [];
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "response.created") id = ev.response.id;
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed" || ev.type === "response.incomplete" || ev.type === "response.failed") {
      out.end = { type: ev.type, status: ev.response.status, stop: ev.response.weft_stop_reason, by: ev.response.weft_interrupted_by,
        rolledBack: ev.response.weft_rolled_back ?? false, removed: ev.response.weft_removed_message_ids ?? [] };
    }
    if (!third && text.includes("Once")) {
      third = client.responses.create({ model: agent, input: "a haiku please", previous_response_id: first.id });
    }
  }
  const answer = await third;
  out.third = { status: answer.status, text: answer.output_text };
  const again = await client.responses.retrieve(id);
  out.retrieved = { status: again.status, stop: again.weft_stop_reason, by: again.weft_interrupted_by };
  out.thread = first.conversation.id;
}
console.log(JSON.stringify(out));
