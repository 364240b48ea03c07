// The HttpAgent the AG-UI interop scripts drive, from their command line:
// NPM_DIR BASE_URL API_KEY AGENT THREAD_ID; its conversation starts with the user's first message.
import { createRequire } from "node:module";
import path from "node:path";

export async function agentFromArgs(first) {
  const [npmDir, baseURL, apiKey, agentName, threadId] = process.argv.slice(2);
  const require = createRequire(path.join(npmDir, "package.json"));
  const { HttpAgent } = await import(require.resolve("@ag-ui/client"));
  return new HttpAgent({
    url: `${baseURL}/api/agents/${agentName}/ag-ui`,
    headers: { Authorization: `Bearer ${apiKey}` },
    threadId,
    initialMessages: [{ id: "u1", role: "user", content: first }],
  });
}

// summary is what a test compares of a message.
export const summary = (m) => ({ role: m.role, content: m.content, toolCalls: (m.toolCalls ?? []).map((c) => c.function.name + " " + c.function.arguments), toolCallId: m.toolCallId });
