// Drives weft serve's /v1 with the official openai client and prints what it saw as JSON.
// Usage: node client.mjs NPM_DIR BASE_URL API_KEY AGENT
import { createRequire } from "node:module";
import path from "node:path";

const [npmDir, baseURL, apiKey, agent] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, "package.json"));
const { default: OpenAI } = await import(require.resolve("openai"));

const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0 });
const out = {};

// Models: the agents.
const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;

// Chat, plain.
const plain = await client.chat.completions.create({
  model: agent,
  messages: [{ role: "user", content: "hello" }],
});
out.plain = {
  content: plain.choices[0].message.content,
  finish: plain.choices[0].finish_reason,
  usage: plain.usage,
  tools: plain.choices[0].message.weft_tool_calls,
};

// Chat, streamed, with usage.
const stream = await client.chat.completions.create({
  model: agent,
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "earlier" },
    { role: "assistant", content: "noted" },
    { role: "user", content: "hello again" },
  ],
  stream: true,
  stream_options: { include_usage: true },
});
let text = "";
let finish = null;
let usage = null;
let chunks = 0;
for await (const c of stream) {
  chunks++;
  if (c.choices.length > 0) {
    text += c.choices[0].delta.content ?? "";
    finish = c.choices[0].finish_reason ?? finish;
  }
  if (c.usage) usage = c.usage;
}
out.streamed = { content: text, finish, usage, chunks };

// Responses, chained by previous_response_id: the second turn sends only its own input.
const first = await client.responses.create({ model: agent, input: "hello" });
const second = await client.responses.create({ model: agent, input: "and again", previous_response_id: first.id });
const readBack = await client.responses.retrieve(second.id);
out.responses = {
  first: { id: first.id, status: first.status, text: first.output_text, conversation: first.conversation },
  second: { id: second.id, status: second.status, text: second.output_text, conversation: second.conversation,
            previous: second.previous_response_id, usage: second.usage,
            items: second.output.map((i) => i.type) },
  readBack: { id: readBack.id, status: readBack.status, text: readBack.output_text },
};

// Responses, streamed through the SDK's accumulating helper.
const rs = client.responses.stream({ model: agent, input: "stream it", previous_response_id: second.id });
const types = [];
let deltas = "";
for await (const ev of rs) {
  types.push(ev.type);
  if (ev.type === "response.output_text.delta") deltas += ev.delta;
}
const final = await rs.finalResponse();
out.responseStream = { deltas, text: final.output_text, status: final.status, types: [...new Set(types)] };

// Errors in OpenAI's shape.
out.errors = {};
for (const [name, f] of Object.entries({
  unknownModel: () => client.chat.completions.create({ model: "no-such-agent", messages: [{ role: "user", content: "x" }] }),
  badKey: () => new OpenAI({ baseURL: baseURL + "/v1", apiKey: "wft_bad", maxRetries: 0 }).models.list(),
  badRequest: () => client.chat.completions.create({ model: agent, messages: [] }),
})) {
  try {
    await f();
    out.errors[name] = "no error";
  } catch (e) {
    out.errors[name] = { status: e.status, type: e.type, code: e.code, param: e.param };
  }
}
console.log(JSON.stringify(out));
