// app.js — the inspector's entry: picks the view from the URL (/ the thread list,
// /threads/{id} a thread, /evals the eval runs, /evals/{id} one run) and asks for an API key when the server wants one.
import { h, fill } from './dom.js';
import { key, setKey, whenUnauthorized } from './api.js';

const main = document.getElementById('main');

// connection shows the live-update state in the header.
export function connection(state) {
  const el = document.getElementById('conn');
  el.className = 'conn conn-' + state;
  el.textContent = { live: 'live', reconnecting: 'reconnecting…', closed: 'offline' }[state] || '';
}

let askedForKey = false;

// askForKey replaces the page with a form for an API key, kept in this tab's sessionStorage.
function askForKey(message) {
  if (askedForKey) return;
  askedForKey = true;
  const input = h('input', { type: 'password', id: 'api-key', autocomplete: 'off', placeholder: 'wft_…', required: true });
  const form = h('form', { class: 'card login', id: 'login' },
    h('h1', null, 'API key'),
    h('p', { class: 'muted' }, 'This server needs an API key (create one with ', h('code', null, 'weft keys create'), '). ' +
      'It is kept in this tab only and sent as Authorization: Bearer.'),
    h('p', { class: 'muted small', id: 'protocols' }, 'The same key runs agents from other clients: OpenAI-compatible ',
      h('code', null, '/v1'), ' (agents as models), the AI SDK\'s useChat at ', h('code', null, '/api/agents/NAME/chat'),
      ', AG-UI at ', h('code', null, '/api/agents/NAME/ag-ui'), ', and MCP at ', h('code', null, '/mcp'), ' (docs/openai-api.md, ai-sdk.md, ag-ui.md).'),
    key() ? h('p', { class: 'error' }, 'The key was refused: ' + message) : null,
    input,
    h('button', { type: 'submit', class: 'primary' }, 'Open'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    setKey(input.value.trim());
    location.reload();
  });
  fill(main, form);
  input.focus();
}

// notFound shows what was asked for does not exist.
export function notFound(what, detail) {
  document.title = 'Not found · Weft inspector';
  fill(main, h('section', { class: 'card notfound', id: 'not-found' },
    h('h1', null, what + ' not found'),
    h('p', { class: 'muted' }, detail),
    h('p', null, h('a', { href: '/' }, '← All threads'))));
}

whenUnauthorized(askForKey);

// The view modules load after this one runs: a thread's first requests go out at once.
const path = location.pathname;
const m = path.match(/^\/threads\/([^/]+)\/?$/);
if (path === '/') {
  import('./list.js').then((v) => v.showList(main));
} else if (m) {
  const id = decodeURIComponent(m[1]);
  import('./thread.js').then((v) => v.showThread(main, id));
} else if (path === '/evals' || path === '/evals/') {
  import('./evals.js').then((v) => v.showEvals(main));
} else if (path.match(/^\/evals\/([^/]+)\/?$/)) {
  const id = decodeURIComponent(path.match(/^\/evals\/([^/]+)\/?$/)[1]);
  import('./evals.js').then((v) => v.showEvalRun(main, id));
} else {
  notFound('Page', 'There is no page at ' + path + '.');
}
