// list.js — the thread list: search, agent/status/tag filters, sorting by activity, age or cost,
// paging, and live updates from GET /api/events.
import { h, clear, fill, threadHref, ago, money, badge } from './dom.js';
import { api, stream } from './api.js';
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
  fill(main, 
    h('section', { class: 'toolbar' }, search, agent, status, tag, sort,
      h('label', { class: 'check' }, children, 'subagents'), summary),
    h('section', { class: 'card flush' },
      h('table', { class: 'threads' },
        h('thead', null, h('tr', null, h('th', null, 'Thread'), h('th', null, 'Agent'), h('th', null, 'Status'),
          h('th', null, 'Tags'), h('th', { class: 'num' }, 'Cost'), h('th', { class: 'num' }, 'Activity'))),
        body),
      h('div', { class: 'pad center' }, more)));

  api('GET', '/api/agents').then((list) => {
    const items = Array.isArray(list) ? list : (list && list.items) || [];
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
    if (page.total === 0) body.append(h('tr', null, h('td', { colspan: 6, class: 'muted center pad' }, 'No threads match.')));
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
