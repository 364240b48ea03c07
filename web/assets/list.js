// list.js — the thread list: search, agent/status/tag filters, sorting by activity, age or cost,
// paging, and live updates from GET /api/events; a "New thread" form (an agent the caller may
// run, a first message: POST /api/threads, then the thread's page) and, with no threads at all,
// what to do first.
import { h, clear, fill, threadHref, ago, money, badge, term } from './dom.js';
import { api, stream, key } from './api.js';
import { connection } from './app.js';

const STATUSES = ['idle', 'running', 'awaiting_human', 'awaiting_approval', 'stopped', 'paused', 'failed', 'terminated'];
const SORTS = [['activity', 'Latest activity'], ['created', 'Newest'], ['oldest', 'Oldest'], ['cost', 'Highest cost']];
const PAGE = 50;

export function showList(main) {
  document.title = 'Threads · Weft inspector';
  const params = new URLSearchParams(location.search);
  const f = {
    search: params.get('search') || '',
    agent: params.get('agent') || '',
    status: params.get('status') || '',
    tag: params.get('tag') || '',
    sort: params.get('sort') || 'activity',
    children: params.get('children') === '1',
  };
  let offset = 0;
  let seq = 0; // answers to an older query are dropped

  const search = h('input', { type: 'search', id: 'f-search', placeholder: 'Search messages, labels, ids…', value: f.search });
  const agent = h('select', { id: 'f-agent' }, h('option', { value: '' }, 'All agents'));
  const status = h('select', { id: 'f-status' }, h('option', { value: '' }, 'Any status'),
    STATUSES.map((s) => h('option', { value: s, selected: s === f.status }, s.replace(/_/g, ' '))));
  const tag = h('input', { type: 'text', id: 'f-tag', placeholder: 'Tag', value: f.tag, size: 10 });
  const sort = h('select', { id: 'f-sort' }, SORTS.map(([v, label]) => h('option', { value: v, selected: v === f.sort }, label)));
  const children = h('input', { type: 'checkbox', id: 'f-children', checked: f.children });
  const summary = h('span', { class: 'muted', id: 'list-summary' });
  const body = h('tbody', { id: 'threads' });
  const more = h('button', { id: 'more', class: 'ghost', hidden: true, onclick: () => load(true) }, 'Show more');
  let agents = []; // the agents the caller may run
  const agentsLoaded = api('GET', '/api/agents').then((list) => {
    agents = Array.isArray(list) ? list : (list && list.items) || [];
    return agents;
  });
  agentsLoaded.catch(() => {});
  const form = newThreadForm(agentsLoaded);
  const newButton = h('button', { class: 'primary', id: 'new-thread', type: 'button', onclick: () => form.open() }, 'New thread');
  const empty = h('section', { class: 'card empty', id: 'empty', hidden: true });
  fill(main, 
    h('section', { class: 'toolbar' }, search, agent, status, tag, sort,
      h('label', { class: 'check' }, children, term('subagent', 'subagents')), summary, newButton),
    form.el,
    empty,
    h('section', { class: 'card flush', id: 'thread-table' },
      h('table', { class: 'threads' },
        h('thead', null, h('tr', null, h('th', null, 'Thread'), h('th', null, 'Agent'), h('th', null, 'Status'),
          h('th', null, 'Tags'), h('th', { class: 'num' }, 'Cost'), h('th', { class: 'num' }, 'Activity'))),
        body),
      h('div', { class: 'pad center' }, more)));

  agentsLoaded.then((items) => {
    for (const a of items) agent.append(h('option', { value: a.name, selected: a.name === f.agent }, a.name));
  }).catch(() => {});

  function query() {
    const q = new URLSearchParams();
    for (const k of ['search', 'agent', 'status', 'tag']) if (f[k]) q.set(k, f[k]);
    if (f.sort !== 'activity') q.set('sort', f.sort);
    if (f.children) q.set('children', '1');
    return q;
  }

  async function load(append) {
    const mine = ++seq;
    const q = query();
    q.delete('children');
    if (f.children) q.set('include_children', 'true');
    q.set('with_cost', 'true');
    q.set('limit', String(PAGE));
    q.set('offset', String(append ? offset : 0));
    let page;
    try {
      page = await api('GET', '/api/threads?' + q);
    } catch (e) {
      if (mine === seq && e.status !== 401) summary.textContent = 'Could not list threads: ' + e.message;
      return;
    }
    if (mine !== seq) return;
    if (!append) {
      clear(body);
      offset = 0;
    }
    offset += page.items.length;
    for (const t of page.items) body.append(row(t));
    const filtered = ['search', 'agent', 'status', 'tag'].some((k) => f[k]) || f.children;
    if (page.total === 0 && filtered) body.append(h('tr', null, h('td', { colspan: 6, class: 'muted center pad' }, 'No threads match.')));
    // No thread at all: say what to do first instead of an empty table.
    const none = page.total === 0 && !filtered;
    document.getElementById('thread-table').hidden = none;
    empty.hidden = !none;
    if (none) agentsLoaded.then((as) => fill(empty, ...emptyState(as, () => form.open()))).catch(() => fill(empty, ...emptyState([], () => form.open())));
    summary.textContent = page.total + (page.total === 1 ? ' thread' : ' threads');
    more.hidden = !page.has_more;
  }

  function changed() {
    f.search = search.value.trim();
    f.agent = agent.value;
    f.status = status.value;
    f.tag = tag.value.trim();
    f.sort = sort.value;
    f.children = children.checked;
    const q = query().toString();
    history.replaceState(null, '', q ? '/?' + q : '/');
    load(false);
  }
  let typing;
  const debounced = () => {
    clearTimeout(typing);
    typing = setTimeout(changed, 200);
  };
  search.addEventListener('input', debounced);
  tag.addEventListener('input', debounced);
  for (const el of [agent, status, sort, children]) el.addEventListener('change', changed);

  // Live: any thread event reloads the shown page (debounced); after a reconnect too, since the
  // global stream does not replay.
  let pending;
  const refresh = () => {
    clearTimeout(pending);
    pending = setTimeout(() => load(false), 150);
  };
  stream('/api/events', {
    onEvent: refresh,
    onState: (s) => {
      connection(s);
      if (s === 'live') refresh();
    },
  });
  load(false);
}

// emptyState is what the list shows before the first thread: how to start one here, from a
// terminal and over the API, with this server's address and an agent it has.
function emptyState(agents, openForm) {
  // A top-level agent makes the best example: those exposed as tools are usually subagents.
  const name = (agents.find((a) => !a.expose_as_tool) || agents[0] || { name: 'AGENT' }).name;
  const auth = key() ? " -H 'Authorization: Bearer '\"$WEFT_API_KEY\"" : '';
  const curl = 'curl -s -X POST ' + location.origin + '/api/threads' + auth +
    " -H 'Content-Type: application/json' -d '" + JSON.stringify({ agent: name, message: { content: 'Hello' } }) + "'";
  return [
    h('h1', null, 'No threads yet'),
    h('p', null, 'A thread is one conversation with an agent: its messages, tool calls and model calls, kept in the store. ' +
      (agents.length ? 'This server has ' + agents.length + (agents.length === 1 ? ' agent' : ' agents') + ': ' + agents.map((a) => a.name).join(', ') + '.' :
        'This server has no agent you may run: add one under agents/ (weft init makes a project with one).')),
    agents.length ? h('p', null, h('button', { class: 'primary', type: 'button', id: 'empty-new', onclick: openForm }, 'Start a thread'), ' with an agent and a first message, here.') : null,
    h('p', { class: 'muted' }, 'Or over the HTTP API (docs/http-api.md):'),
    h('pre', { class: 'cmd', id: 'empty-curl' }, curl),
    h('p', { class: 'muted' }, 'Or from a terminal, on the same store (--db) as this server; the thread appears here:'),
    h('pre', { class: 'cmd', id: 'empty-cli' }, 'weft run ' + name + ' "Hello"'),
  ];
}

// newThreadForm is the "New thread" form: an agent the caller may run, an optional label and a
// first message. It creates the thread with the message (the run starts) and opens its page.
function newThreadForm(agentsLoaded) {
  const pick = h('select', { id: 'nt-agent', required: true });
  const about = h('p', { class: 'muted small', id: 'nt-about' });
  const label = h('input', { type: 'text', id: 'nt-label', placeholder: 'Label (optional)' });
  const text = h('textarea', { id: 'nt-message', rows: 3, placeholder: 'First message… (Ctrl+Enter)' });
  const error = h('p', { class: 'error', id: 'nt-error', hidden: true });
  const submit = h('button', { class: 'primary', type: 'submit', id: 'nt-create' }, 'Create and run');
  const el = h('form', { class: 'card new-thread', id: 'new-thread-form', hidden: true },
    h('h2', null, 'New thread'),
    h('div', { class: 'row' }, h('label', { class: 'check', for: 'nt-agent' }, 'Agent'), pick, label),
    about, text, error,
    h('div', { class: 'row' }, h('span', { class: 'grow' }),
      h('button', { type: 'button', class: 'ghost', onclick: () => (el.hidden = true) }, 'Cancel'), submit));
  let byName = new Map();
  const describe = () => {
    const a = byName.get(pick.value);
    about.textContent = a ? [a.type, a.description].filter(Boolean).join(' · ') : '';
  };
  pick.addEventListener('change', describe);
  agentsLoaded.then((agents) => {
    byName = new Map(agents.map((a) => [a.name, a]));
    fill(pick, agents.map((a) => h('option', { value: a.name }, a.name)));
    if (!agents.length) pick.append(h('option', { value: '' }, '(no agent you may run)'));
    describe();
  }).catch(() => {});
  text.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) el.requestSubmit();
  });
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    if (!pick.value) return;
    const body = { agent: pick.value };
    if (label.value.trim()) body.label = label.value.trim();
    if (text.value.trim()) body.message = { content: text.value };
    submit.disabled = true;
    try {
      const r = await api('POST', '/api/threads', body);
      location.assign(threadHref(r.thread.id));
    } catch (e) {
      error.textContent = 'Could not create the thread: ' + e.message;
      error.hidden = false;
      submit.disabled = false;
    }
  });
  return {
    el,
    open() {
      el.hidden = false;
      text.focus();
    },
  };
}

function row(t) {
  const title = t.label || t.preview || '(no messages yet)';
  return h('tr', { class: 'thread-row', dataset: { id: t.id, status: t.status, agent: t.agent } },
    h('td', { class: 'title' },
      h('a', { href: threadHref(t.id), class: 'thread-link' }, title),
      h('div', { class: 'muted mono small' }, t.id, t.parent_id ? ' · subagent of ' + t.parent_id : '')),
    h('td', null, t.agent),
    h('td', null, badge('status', t.status), t.stop_reason ? h('div', { class: 'muted small' }, t.stop_reason) : null),
    h('td', null, (t.tags || []).map((g) => h('span', { class: 'tag' }, g))),
    h('td', { class: 'num' }, money(t.cost_total)),
    h('td', { class: 'num', title: t.last_activity_at }, ago(t.last_activity_at)));
}
