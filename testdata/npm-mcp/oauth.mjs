// An OAuth MCP client written with the official TypeScript SDK: it connects to a streamable-HTTP
// MCP endpoint with an OAuthClientProvider and nothing else — the SDK finds the authorization
// server from the 401, registers, and sends the user to the authorization URL with PKCE. Here the
// "user" opens that consent page, approves it with an API key, and hands the code back from the
// redirect; the SDK exchanges it and the client calls a tool. It prints what it saw as one JSON
// document. Usage: node oauth.mjs NPM_DIR MCP_URL API_KEY TOOL ARGS_JSON
import path from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, mcpURL, apiKey, tool, argsJSON] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(path.join(npmDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { UnauthorizedError } = await sdk("client/auth.js");

const redirectUrl = "http://127.0.0.1:9/callback";
const unescape = (s) =>
  s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n))).replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
let clientInfo, tokens, verifier, code, state, authorization;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: "npm OAuth client", redirect_uris: [redirectUrl], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  state() { state = "npm-" + Math.random().toString(36).slice(2); return state; },
  clientInformation() { return clientInfo; },
  saveClientInformation(ci) { clientInfo = ci; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
  // The user's browser: the consent page, approved with the API key; the redirect carries the code.
  async redirectToAuthorization(url) {
    authorization = Object.fromEntries(url.searchParams);
    const page = await (await fetch(url)).text();
    const form = new URLSearchParams({ key: apiKey, decision: "approve" });
    for (const m of page.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) form.set(m[1], unescape(m[2]));
    const resp = await fetch(new URL("/oauth/authorize", url), { method: "POST", body: form, redirect: "manual" });
    const loc = new URL(resp.headers.get("location"));
    if (resp.status !== 303 || loc.searchParams.get("state") !== state) throw new Error(`consent answered ${resp.status} ${loc}`);
    code = loc.searchParams.get("code");
  },
};

const client = new Client({ name: "npm-oauth-client", version: "1.0.0" });
let transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
let unauthorized = false;
try {
  await client.connect(transport);
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  unauthorized = true;
}
await transport.finishAuth(code);
transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
await client.connect(transport);
const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) }, undefined, { timeout: 30000 });
console.log(JSON.stringify({ unauthorized, authorization, client_id: clientInfo?.client_id, token_type: tokens?.token_type,
  expires_in: tokens?.expires_in, token_prefix: tokens?.access_token?.slice(0, 4), session: transport.sessionId, result }));
await client.close();
