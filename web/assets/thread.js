// thread.js — one thread: its timeline by side (tool calls paired with their results, sub-prompt
// rows folded under their call, errors marked), the last stop and its step, model calls with
// their redacted request and response bodies, subagents as a tree, and the actions (send with
// attachments, stop, continue, approve or deny, provide a subagent's variables). It renders the
// newest page of messages first and earlier pages on demand, and follows the thread's event
// stream, resuming from the last event after a dropped connection.
import { h, clear, fill, threadHref, pretty, ago, money, num, badge, term, GLOSSARY } from './dom.js';
import { api, stream, blobURL, APIError } from './api.js';
import { connection, notFound } from './app.js';
import { buildComposer } from './composer.js';

const FIRST = 50; // messages of the first paint: the newest
const PAGE = 100; // messages per earlier page
const DEPTH = 64; // sub-prompt depth fetched and streamed

export async function showThread(main, id) {
  const base = '/api/threads/' + encodeURIComponent(id);
  const msgQuery = '&depth=' + DEPTH + '&include_silent=true';
  // The messages paint first; the thread's details (cost, children, stop) fill the head when
  // they arrive.
  const details = api('GET', base);
  details.catch(() => {});
  let first;
  try {
    first = await api('GET', base + '/messages?order=desc&limit=' + FIRST + msgQuery);
  } catch (e) {
    if (e instanceof APIError && e.status === 404) {
      notFound('Thread', 'No thread ' + id + ' exists, or it is not yours to see.');
    } else if (!(e instanceof APIError && e.status === 401)) {
      fill(main, h('p', { class: 'error pad' }, 'Could not load the thread: ' + e.message));
    }
    return;
  }
  performance.mark('weft-data');
  const v = new ThreadView(main, id, base, msgQuery, first);
  v.start(details);
}

class ThreadView {
  constructor(main, id, base, msgQuery, first) {
    this.main = main;
    this.id = id;
    this.base = base;
    this.msgQuery = msgQuery;
    this.thread = { id, status: '', children: [] }; // until its details arrive
    this.rows = new Map(); // message id → row (every depth)
    this.total = first.total;
    this.cache = new Map(); // entry key → {el, sig}
    this.open = new Set(); // keys of <details> the reader opened
    this.approvals = new Map(); // call id → approval
    this.envRequests = new Map(); // request id → request
    this.running = new Set(); // call ids of tools running now
    this.logs = [];
    this.version = 0;
    for (const m of first.items) this.put(m);
    this.build();
  }

  put(m) {
    const old = this.rows.get(m.id);
    m._v = ++this.version;
    if (old && old._stream) m._stream = old._stream;
    if (old && old._stream && m.status === 'pending' && (m.content || '').length < old.content.length) {
      m.content = old.content; // keep deltas a late pending row would hide
    }
    this.rows.set(m.id, m);
  }

  // crumbs names the thread in the title and the header.
  crumbs() {
    const t = this.thread;
    document.title = (t.label || t.agent || t.id) + ' · Weft inspector';
    fill(document.getElementById('crumbs'), h('a', { href: '/' }, 'Threads'),
      t.root_id && t.root_id !== t.id ? [' / ', h('a', { href: threadHref(t.root_id) }, 'root')] : null,
      t.parent_id && t.parent_id !== t.root_id ? [' / ', h('a', { href: threadHref(t.parent_id) }, 'parent')] : null,
      ' / ', h('span', { class: 'mono' }, t.id));
  }

  // build lays out the page; the timeline is filled by render.
  build() {
    this.head = h('section', { class: 'card thread-head', id: 'thread-head' });
    this.earlier = h('button', { class: 'ghost', id: 'earlier', onclick: () => this.loadEarlier() }, 'Load earlier messages');
    this.timeline = h('div', { class: 'timeline', id: 'timeline' });
    this.composer = buildComposer((method, path, body) => this.act(method, path, body));
    this.side = h('aside', { class: 'side' });
    this.calls = h('div', { id: 'model-calls' });
    this.tree = h('div', { id: 'subagents' });
    this.pending = h('div', { id: 'pending' });
    this.runEnd = h('section', { class: 'card run-end', id: 'run-end', hidden: true });
    this.runs = h('div', { id: 'run-timeline' }, h('p', { class: 'muted small' }, 'No steps yet.'));
    this.tasks = h('div', { id: 'a2a-list' });
    this.tasksCard = h('section', { class: 'card', id: 'a2a-tasks', hidden: true }, h('h2', null, term('a2a', 'A2A tasks')), this.tasks);
    this.side.append(
      this.pending,
      h('section', { class: 'card' }, h('h2', null, term('timeline', 'Run timeline')), this.runs),
      this.tasksCard,
      h('section', { class: 'card' }, h('h2', null, term('subagent', 'Subagents')), this.tree),
      h('section', { class: 'card' }, h('h2', null, 'Model calls'), this.calls));
    fill(this.main, h('div', { class: 'thread-page' },
      h('div', { class: 'thread-main' }, this.head, h('div', { class: 'center' }, this.earlier), this.timeline, this.runEnd, this.composer),
      this.side));
  }

  async start(details) {
    this.crumbs();
    this.renderHead();
    performance.mark('weft-head');
    this.render();
    performance.mark('weft-timeline');
    window.scrollTo(0, document.body.scrollHeight);
    performance.mark('weft-rendered');
    // The frame that shows the messages is painted after this animation frame's callbacks.
    requestAnimationFrame(() => setTimeout(() => {
      window.weftShownAtPaint = this.timeline.querySelectorAll('.msg').length; // what that frame showed
      performance.mark('weft-painted');
    }, 0));
    document.body.dataset.ready = 'thread';
    // Auto-load earlier pages when the reader scrolls to the top.
    new IntersectionObserver((es) => {
      if (es.some((e) => e.isIntersecting) && !this.loading && this.rows.size < this.total) this.loadEarlier();
    }).observe(this.earlier);
    try {
      this.thread = await details;
      // What the last run left out of its requests, until the stream reports a newer one.
      if (this.thread.last_context && !this.context) this.context = this.thread.last_context;
    } catch (e) {
      if (e instanceof APIError && e.status === 404) notFound('Thread', 'No thread ' + this.id + ' exists, or it is not yours to see.');
      return;
    }
    this.total = Math.max(this.total, this.thread.message_count || 0);
    this.crumbs();
    this.renderHead();
    this.follow();
    this.refreshSide();
  }

  follow() {
    // From the cursor the thread had when the page loaded: what happens next, and after a drop,
    // what was missed (Last-Event-ID).
    this.stream = stream(this.base + '/events?reasoning=true&depth=' + DEPTH + '&include_silent=true', {
      after: this.thread.event_seq || 0,
      onEvent: (type, data) => this.onEvent(type, data),
      onState: (s) => {
        connection(s);
        document.body.dataset.stream = s;
        if (s === 'live' && !this.caughtUp) {
          this.caughtUp = true;
          this.catchUp();
        }
      },
    });
    window.weftStream = this.stream; // lets a person (or a test) drop the connection from the console
  }

  // catchUp refetches the newest rows once the stream is live: what changed between the first
  // page and the cursor the stream started from is not lost.
  async catchUp() {
    let page;
    try {
      page = await api('GET', this.base + '/messages?order=desc&limit=' + FIRST + this.msgQuery);
    } catch {
      return;
    }
    for (const m of page.items) {
      const old = this.rows.get(m.id);
      if (!old || old.status !== m.status || old.content !== m.content) {
        if (!old) this.total++;
        this.put(m);
      }
    }
    this.total = Math.max(this.total, page.total);
    this.schedule();
  }

  async loadEarlier() {
    if (this.loading || this.rows.size >= this.total) return;
    this.loading = true;
    this.earlier.textContent = 'Loading…';
    try {
      const page = await api('GET', this.base + '/messages?order=desc&limit=' + PAGE + '&offset=' + this.rows.size + this.msgQuery);
      this.total = page.total;
      for (const m of page.items) if (!this.rows.has(m.id)) this.put(m);
      // Keep what the reader looks at in place while rows appear above it.
      const fromBottom = document.body.scrollHeight - window.scrollY;
      this.render();
      window.scrollTo(0, document.body.scrollHeight - fromBottom);
    } finally {
      this.loading = false;
      this.earlier.textContent = 'Load earlier messages';
    }
  }

  // ---------------------------------------------------------------- events

  onEvent(type, d) {
    switch (type) {
      case 'message': {
        const m = d.message;
        if (!m) return;
        if (!this.rows.has(m.id)) this.total++;
        this.put(m);
        this.schedule();
        if (m.role === 'tool' && /envreq_/.test(m.content || '')) this.findEnvRequests();
        if (m.metadata && m.metadata.subagent_id) this.refreshTree();
        if (m.role === 'user' && m.depth === 0) this.refreshTasks();
        break;
      }
      case 'message_deleted':
        if (this.rows.delete(d.message_id)) this.total--;
        this.schedule();
        break;
      case 'message_chunk':
      case 'reasoning_chunk':
        this.chunk(type, d);
        break;
      case 'run_started':
        this.thread.status = 'running';
        this.renderHead();
        break;
      case 'step_started':
        this.step = d;
        this.renderHead();
        break;
      case 'tool_started':
        this.running.add(d.call_id);
        this.schedule();
        break;
      case 'tool_completed':
        this.running.delete(d.call_id);
        this.schedule();
        this.refreshLogs();
        break;
      case 'llm_request':
      case 'llm_response':
      case 'fallback_triggered':
        this.refreshLogs();
        break;
      case 'context_trimmed':
      case 'context_summarized':
      case 'context_summary_failed':
        this.context = { type, ...d };
        this.renderHead();
        break;
      case 'subagent':
        this.refreshTree();
        break;
      case 'env_required':
        this.loadEnvRequest(d.request_id);
        break;
      case 'run_stopped':
        this.running.clear();
        this.step = null;
        this.refreshThread();
        this.refreshSide();
        break;
    }
  }

  // chunk appends streamed text to its message as it arrives.
  chunk(type, d) {
    let m = this.rows.get(d.message_id);
    if (!m) {
      m = { id: d.message_id, role: 'assistant', side: 'a', content: '', depth: d.depth || 0, status: 'pending', seq: Infinity };
      this.put(m);
      this.total++;
    }
    m._stream = (m._stream || 0) + 1;
    if (type === 'reasoning_chunk') {
      m.reasoning = (m.reasoning || '') + d.delta;
      this.schedule();
      return;
    }
    m.content = (m.content || '') + d.delta;
    const el = document.getElementById('c-' + m.id);
    if (el) {
      el.textContent = m.content;
      el.closest('.msg').dataset.chunks = m._stream;
      this.stick();
    } else {
      m._v = ++this.version;
      this.schedule();
    }
  }

  schedule() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      const bottom = this.nearBottom();
      this.render();
      if (bottom) this.stick(true);
    });
  }

  nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  }

  stick(force) {
    if (force || this.nearBottom()) window.scrollTo(0, document.body.scrollHeight);
  }

  // ---------------------------------------------------------------- timeline

  // render lays out the loaded rows: each top-level row is an entry; a tool row goes under the
  // call it answers, sub-prompt rows under the tool row of their call. Entries whose rows did
  // not change keep their elements (and the reader's place and open sections).
  render() {
    const all = [...this.rows.values()].sort((a, b) => a.seq - b.seq);
    const byParent = new Map(); // tool row id → nested rows
    const results = new Map(); // call id → tool row
    const known = new Set(all.map((m) => m.id));
    for (const m of all) {
      if (m.role === 'tool' && m.tool_call_id) results.set(m.tool_call_id, m);
      if (m.depth > 0 && m.parent_id && known.has(m.parent_id)) {
        if (!byParent.has(m.parent_id)) byParent.set(m.parent_id, []);
        byParent.get(m.parent_id).push(m);
      }
    }
    const calls = new Set();
    for (const m of all) for (const c of m.tool_calls || []) calls.add(c.id);
    const ctx = { results, byParent, calls };
    // Top level: depth 0 rows (their tool rows shown with the call when it is loaded), and
    // nested rows whose call's result is not there yet (a sub-prompt running now).
    const entries = [];
    for (const m of all) {
      const orphan = m.depth > 0 && !(m.parent_id && known.has(m.parent_id));
      if (m.depth > 0 && !orphan) continue;
      if (m.role === 'tool' && m.tool_call_id && calls.has(m.tool_call_id)) continue;
      entries.push(m);
    }
    const seen = new Set();
    let prev = null;
    for (const m of entries) {
      const sig = this.sig(m, ctx);
      let c = this.cache.get(m.id);
      if (!c || c.sig !== sig) {
        const el = this.msg(m, ctx);
        if (c) c.el.replaceWith(el);
        c = { el, sig };
        this.cache.set(m.id, c);
      }
      seen.add(m.id);
      const want = prev ? prev.nextSibling : this.timeline.firstChild;
      if (want !== c.el) this.timeline.insertBefore(c.el, want);
      prev = c.el;
    }
    for (const [k, c] of this.cache) {
      if (!seen.has(k)) {
        c.el.remove();
        this.cache.delete(k);
      }
    }
    this.earlier.hidden = this.rows.size >= this.total;
    if (entries.length === 0) this.timeline.dataset.empty = 'No messages yet.';
    else delete this.timeline.dataset.empty;
  }

  // sig is what an entry shows: its rows and their versions, and the calls' live state.
  sig(m, ctx) {
    let s = m.id + ':' + m._v;
    for (const c of m.tool_calls || []) {
      const r = ctx.results.get(c.id);
      s += '|' + c.id + (this.running.has(c.id) ? '*' : '') + (this.approvals.has(c.id) ? '?' : '');
      if (r) {
        s += ':' + r._v;
        for (const n of ctx.byParent.get(r.id) || []) s += ',' + this.sig(n, ctx);
      }
    }
    return s;
  }

  msg(m, ctx) {
    const side = m.side || 'none';
    const cls = ['msg', 'role-' + m.role, 'side-' + side];
    if (m.silent) cls.push('silent');
    if ((m.metadata || {}).context_summary) cls.push('summary');
    if (m.status === 'failed' || m.tool_status === 'error') cls.push('failed');
    if (m.status === 'pending') cls.push('pending');
    if ((m.tool_calls || []).length) cls.push('has-calls');
    const who = [m.role];
    if (m.side) who.push(' · ', term('side ' + m.side.toUpperCase()));
    if (m.name) who.push(' · ' + m.name);
    if (m.prompt) who.push(' · ' + m.prompt);
    const meta = m.metadata || {};
    const el = h('article', { class: cls.join(' '), id: 'm-' + m.id, dataset: { id: m.id, seq: m.seq, depth: m.depth } },
      h('header', null,
        h('span', { class: 'who' }, who),
        m.silent ? h('span', { class: 'flag' }, term('silent')) : null,
        m.status === 'failed' ? h('span', { class: 'flag flag-error' }, 'failed') : null,
        m.status === 'pending' ? h('span', { class: 'flag flag-live' }, 'streaming') : null,
        meta.subagent_id ? h('a', { class: 'flag', href: threadHref(meta.subagent_id) }, 'from subagent ' + meta.subagent_id) : null,
        meta.context_summary ? h('span', { class: 'flag flag-summary', title: 'Sent to ' + (meta.summary_prompt || 'its prompt') +
          ' instead of the messages it covers' }, 'summary of ' + meta.summary_messages + (meta.summary_messages === 1 ? ' message' : ' messages') + ' through #' + meta.summary_through_seq) : null,
        h('span', { class: 'grow' }),
        m.log_id ? h('a', { class: 'chip mono', href: '#log-' + m.log_id, onclick: () => this.openLog(m.log_id) }, this.logLabel(m.log_id)) : null,
        m.depth === 0 && m.status !== 'pending' ? h('a', { class: 'chip fork', href: '#', role: 'button', title: 'A new thread with the messages up to this one',
          onclick: (ev) => { ev.preventDefault(); this.fork(m.id); } }, 'Fork from here') : null,
        m.depth === 0 && m.role === 'user' && !m.silent ? h('a', { class: 'chip edit', href: '#', role: 'button',
          title: 'Send an edited text on a fork of the messages before this one', onclick: (ev) => { ev.preventDefault(); this.edit(m, el); } }, 'Edit') : null,
        m.depth === 0 && m.role === 'assistant' && m.status !== 'pending' ? h('a', { class: 'chip retry', href: '#', role: 'button',
          title: 'A new thread with the messages before this one, answered again', onclick: (ev) => { ev.preventDefault(); this.retry(m.id); } }, 'Retry') : null,
        Number.isFinite(m.seq) ? h('span', { class: 'seq muted' }, '#' + m.seq) : null,
        m.created_at ? h('time', { class: 'muted', datetime: m.created_at, title: m.created_at }, ago(m.created_at)) : null));
    if (m._stream) el.dataset.chunks = m._stream;
    if (m.reasoning) el.append(this.details('r-' + m.id, 'Reasoning', h('pre', { class: 'reasoning' }, m.reasoning)));
    if (m.content || m.status === 'pending' || !(m.tool_calls || []).length) {
      el.append(h('div', { class: 'content', id: 'c-' + m.id }, m.content || ''));
    }
    if ((m.attachments || []).length) el.append(this.attachments(m.attachments));
    for (const c of m.tool_calls || []) el.append(this.call(c, ctx.results.get(c.id), ctx));
    return el;
  }

  call(c, res, ctx) {
    const approval = this.approvals.get(c.id);
    let state = res ? (res.tool_status || 'done') : this.running.has(c.id) ? 'running' : approval ? 'awaiting approval' : 'pending';
    const cls = 'call call-' + state.replace(/ /g, '-');
    const nested = res ? ctx.byParent.get(res.id) || [] : [];
    const child = res && this.childOf(res);
    const el = h('div', { class: cls, dataset: { callId: c.id, tool: c.name } },
      h('div', { class: 'call-head' },
        h('span', { class: 'tool-name' }, c.name),
        badge('tool', state),
        child ? h('a', { class: 'chip', href: threadHref(child) }, 'subagent thread →') : null,
        h('span', { class: 'grow' }),
        h('span', { class: 'muted mono small' }, c.id)),
      h('div', { class: 'label' }, 'Arguments'),
      h('pre', { class: 'args' }, pretty(c.arguments)));
    if (approval) el.append(this.approvalForm(approval));
    if (nested.length) {
      const inner = h('div', { class: 'nested' });
      for (const n of nested) inner.append(this.msg(n, ctx));
      el.append(this.details('s-' + res.id, [term('sub-prompt', 'Sub-prompt'), ' · ' + nested.length + (nested.length === 1 ? ' message' : ' messages')], inner, 'subprompt'));
    }
    if (res) {
      el.append(h('div', { class: 'label' }, 'Result'),
        h('pre', { class: 'result' + (res.tool_status === 'error' ? ' error' : '') }, pretty(res.content || '')));
      if ((res.attachments || []).length) el.append(this.attachments(res.attachments));
    }
    return el;
  }

  // childOf finds the subagent thread a tool row speaks of.
  childOf(res) {
    const meta = res.metadata || {};
    if (meta.subagent_id) return meta.subagent_id;
    for (const k of this.thread.children || []) if ((res.content || '').includes(k.id)) return k.id;
    return null;
  }

  details(key, title, body, cls) {
    const d = h('details', { class: cls || '', open: this.open.has(key), dataset: { key } }, h('summary', null, title), body);
    d.addEventListener('toggle', () => (d.open ? this.open.add(key) : this.open.delete(key)));
    return d;
  }

  attachments(list) {
    const box = h('div', { class: 'attachments' });
    for (const a of list) {
      const path = this.base + '/fs/' + String(a.path || '').replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/');
      const label = (a.name || a.path) + ' · ' + (a.mime_type || '') + (a.size ? ' · ' + num(a.size) + ' B' : '');
      if ((a.mime_type || '').startsWith('image/')) {
        const img = h('img', { alt: a.description || a.name || 'attachment', class: 'thumb' });
        blobURL(path).then((u) => (img.src = u)).catch(() => img.replaceWith(h('span', { class: 'muted' }, '(image unavailable)')));
        box.append(h('figure', null, img, h('figcaption', { class: 'muted small' }, label)));
      } else {
        const link = h('a', { href: '#', class: 'file' }, label);
        link.addEventListener('click', async (ev) => {
          ev.preventDefault();
          const u = await blobURL(path + '?download=1');
          const a2 = h('a', { href: u, download: a.name || 'file' });
          a2.click();
          setTimeout(() => URL.revokeObjectURL(u), 10000);
        });
        box.append(link);
      }
    }
    return box;
  }

  // ---------------------------------------------------------------- head and actions

  renderHead() {
    const t = this.thread;
    const s = t.last_stop;
    const running = t.status === 'running';
    const stop = s && !running
      ? h('div', { class: 'stop' + (s.error ? ' error' : ''), id: 'stop-reason' },
        'Stopped: ', h('strong', null, term(s.reason || t.stop_reason)), s.steps ? ' after step ' + s.steps : '',
        s.side ? [' (', term('side ' + s.side.toUpperCase()), ')'] : '', s.error ? h('div', null, s.error) : null)
      : t.stop_reason && !running ? h('div', { class: 'stop', id: 'stop-reason' }, 'Stopped: ', h('strong', null, term(t.stop_reason))) : null;
    const live = running && this.step
      ? h('div', { class: 'stop live' }, 'Running ', term('step'), ' ' + this.step.step + ' · ', term('side ' + String(this.step.side || '').toUpperCase()),
        this.step.prompt ? ' · ' + this.step.prompt : '')
      : null;
    fill(this.head, 
      h('div', { class: 'row' },
        h('h1', null, t.label || t.agent),
        badge('status', t.status),
        h('span', { class: 'grow' }),
        h('button', { id: 'stop', class: 'danger', disabled: !running, onclick: () => this.act('POST', '/stop') }, 'Stop'),
        this.continueControl(running)),
      h('div', { class: 'facts' },
        fact('Agent', t.agent),
        fact('Thread', h('span', { class: 'mono' }, t.id)),
        t.user_id ? fact(term('owner', 'Owner'), h('span', { class: 'mono' }, t.user_id)) : null,
        fact('Messages', num(this.total)),
        fact('Cost', money(t.cost_total)),
        fact('Created', ago(t.created_at)),
        fact('Activity', ago(t.last_activity_at)),
        (t.tags || []).length ? fact('Tags', (t.tags || []).map((g) => h('span', { class: 'tag' }, g))) : null,
        t.forked_from ? fact('Forked from', h('a', { id: 'forked-from', class: 'mono', href: threadHref(t.forked_from.thread) + '#m-' + t.forked_from.message },
          t.forked_from.thread + (t.forked_from.before ? ' (before ' : ' (at ') + t.forked_from.message + ')')) : null,
        (t.forks || []).length ? fact('Forks', t.forks.map((f) => h('a', { class: 'mono fork-link', href: threadHref(f.id) }, f.id))) : null),
      stop, live, this.contextBox(), this.evalBox(),
      h('div', { id: 'action-error', class: 'error', hidden: true }));
    this.renderRunEnd();
  }

  // renderRunEnd shows, at the end of the conversation, how the last run failed: its stop reason
  // and its error text (from the run_stopped event, or for a run that recorded no events — weft
  // run, weft chat — the newest error its logs hold).
  renderRunEnd() {
    const t = this.thread;
    const s = t.last_stop || {};
    const failed = t.status !== 'running' && (s.error || t.status === 'failed');
    this.runEnd.hidden = !failed;
    if (!failed) {
      clear(this.runEnd);
      return;
    }
    const reason = s.reason || t.stop_reason || 'failed';
    fill(this.runEnd,
      h('div', { class: 'run-end-head' }, 'The run stopped: ', h('strong', null, term(reason)),
        s.steps ? ' after step ' + s.steps : '', s.side ? [' (', term('side ' + s.side.toUpperCase()), ')'] : '',
        s.at ? h('span', { class: 'muted small' }, ' · ' + ago(s.at)) : null),
      s.error ? h('pre', { class: 'run-error', id: 'run-error' }, s.error)
        : h('p', { class: 'muted small' }, 'No error text was recorded for this run; its model calls are in the side panel.'),
      s.log_id ? h('a', { class: 'small', href: '#log-' + s.log_id, onclick: () => this.openLog(s.log_id) }, 'The model call that failed →') : null);
  }

  // contextBox tells what the newest request left out of the history to fit its model's window
  // (context_trimmed), or what the summarizer folded (context_summarized), as the run reports it.
  contextBox() {
    const c = this.context;
    if (!c) return null;
    let text;
    switch (c.type) {
      case 'context_trimmed':
        text = 'Last request: ' + c.omitted_messages + ' older messages left out to fit model ' + c.model + "'s window (" +
          num(c.tokens_before) + ' → ' + num(c.tokens_after) + ' tokens of ' + num(c.budget) + ', strategy ' + (c.strategy || 'window') + ')';
        break;
      case 'context_summarized':
        text = 'Summarized: ' + c.folded_messages + ' messages folded into the summary of ' + c.prompt + ' by ' + c.summarizer +
          ' (' + c.summary_messages + ' in all, through #' + c.through_seq + ')';
        break;
      default:
        text = 'The summarizer ' + c.summarizer + ' failed; older messages were left out instead: ' + c.error;
    }
    return h('div', { class: 'stop context', id: 'context-note' }, text);
  }

  // evalBox shows a `weft eval` case thread's verdicts (its KV eval.verdict) beside the
  // transcript: each turn's expectations, passed or failed with the value found.
  evalBox() {
    const t = this.thread;
    if (!(t.tags || []).includes('eval')) return null;
    const box = h('div', { class: 'eval', id: 'eval-verdict' }, 'Eval ', h('strong', null, (t.properties || {}).eval || ''),
      ' · case ', h('strong', null, (t.properties || {}).eval_case || ''), ' · ', badge('verdict', (t.properties || {}).eval_verdict || 'pending'));
    if (!this.verdict) {
      this.verdict = api('GET', this.base + '/kv/eval.verdict');
    }
    this.verdict.then((v) => {
      for (const [i, turn] of (v.turns || []).entries()) {
        const list = h('ul', { class: 'expectations' });
        for (const r of turn.results || []) {
          list.append(h('li', { class: r.pass ? 'pass' : 'fail' }, (r.pass ? '✓ ' : '✗ ') + r.expectation,
            r.pass || !r.actual ? null : h('span', { class: 'muted' }, ' — got ' + r.actual),
            r.reason ? h('span', { class: 'muted' }, ' (' + r.reason + ')') : null));
        }
        box.append(h('div', { class: 'small' }, 'Turn ' + (i + 1) + ' · ' + num(turn.steps) + ' steps · ' + money(turn.cost_usd) + ' · ' + num(turn.latency_ms) + ' ms'), list);
      }
      if (v.error) box.append(h('div', { class: 'error' }, v.error));
    }, () => {});
    return box;
  }

  continueControl(running) {
    const sel = h('select', { id: 'continue-side', disabled: running },
      h('option', { value: '' }, 'next side'), h('option', { value: 'a' }, 'side A'), h('option', { value: 'b' }, 'side B'));
    return h('span', { class: 'joined' }, h('button', {
      id: 'continue', disabled: running || this.thread.status === 'terminated', title: GLOSSARY.continue,
      onclick: () => this.act('POST', '/continue', sel.value ? { side: sel.value } : {}),
    }, 'Continue'), sel);
  }

  // fork makes a thread of the messages up to id (POST /fork) and opens it.
  async fork(id) {
    const r = await this.act('POST', '/fork', { at: id });
    location.href = threadHref(r.thread.id);
  }

  // edit opens an editor of the user message m in its element el; saving sends the new text on a
  // fork of the messages before m (POST …/edit) and opens the fork.
  edit(m, el) {
    if (el.querySelector('form.edit')) return;
    const text = h('textarea', { rows: 3, class: 'edit-text' });
    text.value = m.content || '';
    const form = h('form', { class: 'edit' }, text,
      h('div', { class: 'row' }, h('span', { class: 'grow' }),
        h('button', { type: 'button', class: 'ghost', onclick: () => form.remove() }, 'Cancel'),
        h('button', { type: 'submit', class: 'primary' }, 'Send on a fork')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const r = await this.act('POST', '/messages/' + encodeURIComponent(m.id) + '/edit', { content: text.value });
      location.href = threadHref(r.thread.id);
    });
    el.append(form);
    text.focus();
  }

  // retry answers again on a fork of the messages before the assistant message id, and opens it.
  async retry(id) {
    const r = await this.act('POST', '/messages/' + encodeURIComponent(id) + '/retry');
    location.href = threadHref(r.thread.id);
  }

  async act(method, path, body) {
    const err = document.getElementById('action-error');
    err.hidden = true;
    try {
      return await api(method, this.base + path, body);
    } catch (e) {
      err.textContent = e.message;
      err.hidden = false;
      throw e;
    }
  }

  approvalForm(a) {
    const reason = h('input', { type: 'text', placeholder: 'reason (for a denial)', class: 'reason' });
    const decide = async (approve) => {
      const body = { approve };
      if (!approve && reason.value) body.reason = reason.value;
      await this.act('POST', '/approvals/' + encodeURIComponent(a.call_id), body);
      this.approvals.delete(a.call_id);
      this.schedule();
    };
    return h('div', { class: 'approval' },
      h('strong', null, term('approval', 'Waiting for approval')),
      h('button', { class: 'primary approve', onclick: () => decide(true) }, 'Approve'),
      h('button', { class: 'danger deny', onclick: () => decide(false) }, 'Deny'),
      reason);
  }

  // ---------------------------------------------------------------- side panel

  refreshSide() {
    this.refreshLogs();
    this.refreshTasks();
    this.refreshTree();
    this.refreshApprovals();
    this.findEnvRequests();
  }

  async refreshThread() {
    try {
      this.thread = await api('GET', this.base);
      this.total = Math.max(this.total, this.thread.message_count);
    } catch {
      return;
    }
    this.renderHead();
  }

  async refreshApprovals() {
    let list = [];
    try {
      list = await api('GET', this.base + '/approvals');
    } catch {
      return;
    }
    this.approvals = new Map(list.map((a) => [a.call_id, a]));
    this.schedule();
  }

  // findEnvRequests looks for variables requests named by the loaded tool rows.
  findEnvRequests() {
    for (const m of this.rows.values()) {
      if (m.role !== 'tool') continue;
      for (const id of (m.content || '').match(/envreq_[0-9a-z]+/g) || []) {
        if (!this.envRequests.has(id)) this.loadEnvRequest(id);
      }
    }
  }

  async loadEnvRequest(id) {
    this.envRequests.set(id, null);
    let req;
    try {
      req = await api('GET', this.base + '/variables/' + encodeURIComponent(id));
    } catch {
      return;
    }
    this.envRequests.set(id, req);
    this.renderPending();
  }

  renderPending() {
    clear(this.pending);
    for (const req of this.envRequests.values()) {
      if (!req || req.status !== 'pending') continue;
      const inputs = req.missing.map((name) => {
        const decl = (req.required || []).find((r) => r.name === name) || {};
        return h('label', { class: 'field' }, h('span', null, name, decl.description ? h('span', { class: 'muted' }, ' — ' + decl.description) : null),
          h('input', { type: decl.type === 'text' ? 'text' : 'password', name, autocomplete: 'off', required: true }));
      });
      const form = h('form', { class: 'card env-request', dataset: { request: req.request_id } },
        h('h2', null, 'Variables for subagent ' + req.agent),
        h('p', { class: 'muted small' }, 'The subagent starts once these are set; the values go to its own thread.'),
        inputs, h('button', { class: 'primary', type: 'submit' }, 'Provide and start'));
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const env = {};
        for (const i of form.querySelectorAll('input')) env[i.name] = i.value;
        try {
          await this.act('POST', '/variables/' + encodeURIComponent(req.request_id), { env });
          req.status = 'fulfilled';
          this.renderPending();
          this.refreshTree();
        } catch {
          /* shown in the head */
        }
      });
      this.pending.append(form);
    }
  }

  async refreshLogs() {
    clearTimeout(this.logTimer);
    this.logTimer = setTimeout(async () => {
      let page;
      try {
        page = await api('GET', this.base + '/logs?limit=500');
      } catch {
        return;
      }
      this.logs = page.items.filter((l) => l.kind === 'llm' || !l.kind);
      this.renderLogs();
      let calls = [];
      try {
        calls = await api('GET', this.base + '/tool-calls');
      } catch {
        /* the timeline shows the model calls alone */
      }
      this.renderRuns(calls);
      // Message chips name their call's model: refresh them.
      for (const c of this.cache.values()) for (const chip of c.el.querySelectorAll('.chip[href^="#log-"]')) {
        chip.textContent = this.logLabel(chip.getAttribute('href').slice(5));
      }
    }, 100);
  }

  // renderRuns draws the run timeline: per run, each step (a model call, with its retries) and the
  // tool calls it asked for, each with its duration and a bar placed on the run's time span.
  // Model calls start at created_at and last latency_ms; tool calls last from started_at to
  // finished_at (the model script's virtual clock gives both in tests).
  renderRuns(calls) {
    const byMessage = new Map();
    for (const c of calls || []) {
      if (!byMessage.has(c.message_id)) byMessage.set(c.message_id, []);
      byMessage.get(c.message_id).push(c);
    }
    const runs = new Map(); // run id → steps
    const steps = new Map(); // log id → step
    for (const l of this.logs) {
      const start = Date.parse(l.created_at);
      const end = start + (l.latency_ms || 0);
      const retried = l.retry_of_log_id && steps.get(l.retry_of_log_id);
      if (retried) {
        retried.attempts.push(l);
        retried.end = Math.max(retried.end, end);
        steps.set(l.id, retried);
        continue;
      }
      const step = { log: l, attempts: [l], start, end, calls: byMessage.get(l.message_id) || [] };
      steps.set(l.id, step);
      if (!runs.has(l.run_id)) runs.set(l.run_id, []);
      runs.get(l.run_id).push(step);
    }
    // A reply's calls run one after another, each stored before the next starts: a call starts
    // when it was marked running (started_at, non-idempotent calls), else when what came before it
    // ended — the reply's model call, or the previous call.
    for (const st of steps.values()) {
      if (st.log !== st.attempts[0] || st.timed) continue;
      st.timed = true;
      let prev = st.end;
      st.calls = st.calls.slice().sort((a, b) => a.seq - b.seq).map((c) => {
        const ce = c.finished_at ? Date.parse(c.finished_at) : null;
        const cs = c.started_at ? Date.parse(c.started_at) : ce !== null ? Math.min(prev, ce) : null;
        if (ce !== null) prev = ce;
        return { c, start: cs, end: ce, derived: !c.started_at };
      });
      for (const x of st.calls) if (x.end !== null) st.end = Math.max(st.end, x.end);
    }
    clear(this.runs);
    if (!runs.size) {
      this.runs.append(h('p', { class: 'muted small' }, 'No steps yet.'));
      return;
    }
    let n = 0;
    for (const [runID, list] of runs) {
      n++;
      const t0 = Math.min(...list.map((s) => s.start));
      const t1 = Math.max(...list.map((s) => s.end));
      const span = Math.max(t1 - t0, 1);
      const bar = (a, b, cls) => h('span', { class: 'tl-track' }, h('span', {
        class: 'tl-bar ' + cls,
        style: null,
        dataset: { left: ((a - t0) / span * 100).toFixed(2), width: (Math.max(b - a, 0) / span * 100).toFixed(2) },
      }));
      const box = h('div', { class: 'tl-run', dataset: { run: runID } },
        h('div', { class: 'tl-head' }, h('strong', null, 'Run ' + n), ' · ' + list.length + (list.length === 1 ? ' step' : ' steps') + ' · ',
          h('span', { class: 'dur' }, duration(t1 - t0))));
      list.forEach((st, i) => {
        const l = st.log;
        const what = [term('step', 'Step ' + (i + 1))];
        if (l.depth) what.push(' · ', term('sub-prompt', 'depth ' + l.depth));
        if (l.prompt) what.push(' · ' + l.prompt);
        if (l.side) what.push(' · ', term('side ' + l.side.toUpperCase()));
        box.append(h('div', { class: 'tl-row tl-step', dataset: { log: l.id, ms: st.end - st.start, depth: l.depth || 0 } },
          h('span', { class: 'tl-name' }, what), h('span', { class: 'dur' }, duration(st.end - st.start)), bar(st.start, st.end, 'step')));
        for (const a of st.attempts) {
          const as = Date.parse(a.created_at);
          const failed = a.error || (a.status_code && a.status_code >= 400);
          box.append(h('div', { class: 'tl-row tl-model' + (failed ? ' failed' : ''), dataset: { log: a.id, ms: a.latency_ms || 0 } },
            h('a', { class: 'tl-name', href: '#log-' + a.id, onclick: () => this.openLog(a.id) }, 'model ' + (a.model || '') + (a.retry_of_log_id ? ' (retry)' : '')),
            h('span', { class: 'dur' }, duration(a.latency_ms || 0)), bar(as, as + (a.latency_ms || 0), 'model')));
        }
        for (const { c, start, end, derived } of st.calls) {
          const done = start !== null && end !== null;
          box.append(h('div', { class: 'tl-row tl-call', dataset: { tool: c.name, call: c.call_id, ms: done ? end - start : '' },
            title: derived && done ? 'Timed from the end of what ran before it: calls run one after another.' : null },
            h('span', { class: 'tl-name mono' }, c.name),
            h('span', { class: 'dur' }, done ? duration(end - start) : String(c.status || '').replace(/_/g, ' ')),
            done ? bar(start, end, 'call') : h('span', { class: 'tl-track' })));
        }
      });
      this.runs.append(box);
    }
    // Bars are placed from their data (the policy allows no inline styles).
    for (const b of this.runs.querySelectorAll('.tl-bar')) {
      b.style.marginLeft = b.dataset.left + '%';
      b.style.width = 'max(2px, ' + b.dataset.width + '%)';
    }
  }

  // refreshTasks shows the thread's A2A tasks (GET …/a2a/tasks): for a thread A2A clients talk
  // to, each task (one user message up to the next run stop), its state and its artifacts.
  refreshTasks() {
    clearTimeout(this.taskTimer);
    this.taskTimer = setTimeout(async () => {
      let r;
      try {
        r = await api('GET', this.base + '/a2a/tasks');
      } catch {
        this.tasksCard.hidden = true;
        return;
      }
      this.tasksCard.hidden = !r.a2a;
      clear(this.tasks);
      if (!r.a2a) return;
      if (!r.items.length) {
        this.tasks.append(h('p', { class: 'muted small' }, 'No tasks yet.'));
        return;
      }
      const list = h('ul', { class: 'tasks' });
      for (const task of r.items) {
        const state = (task.status && task.status.state) || '';
        const first = (task.history || []).find((m) => m.role === 'ROLE_USER' || m.role === 'user') || (task.history || [])[0];
        const text = first ? (first.parts || []).map((p) => p.text || '').join(' ').trim() : '';
        const status = task.status && task.status.message ? (task.status.message.parts || []).map((p) => p.text || '').join(' ').trim() : '';
        list.append(h('li', { class: 'task', dataset: { task: task.id, state } },
          h('div', { class: 'row' }, badge('task', state.replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-')),
            h('span', { class: 'task-text' }, text || '(no text)')),
          status ? h('div', { class: 'muted small task-status' }, status) : null,
          (task.artifacts || []).length ? h('div', { class: 'small' }, 'Artifacts: ', task.artifacts.map((a) => h('span', { class: 'tag' }, a.name || a.artifactId))) : null,
          h('div', { class: 'muted mono small' }, task.id, task.status && task.status.timestamp ? ' · ' + ago(task.status.timestamp) : '')));
      }
      this.tasks.append(list);
    }, 100);
  }

  logLabel(id) {
    const l = this.logs.find((x) => x.id === id);
    return l ? l.model + ' · ' + num(l.input_tokens) + '→' + num(l.output_tokens) : 'model call';
  }

  renderLogs() {
    clear(this.calls);
    if (!this.logs.length) {
      this.calls.append(h('p', { class: 'muted small' }, 'No model calls yet.'));
      return;
    }
    const attempt = new Map();
    for (const l of this.logs) attempt.set(l.id, l.retry_of_log_id ? (attempt.get(l.retry_of_log_id) || 1) + 1 : 1);
    for (const l of [...this.logs].reverse()) {
      const failed = l.error || (l.status_code && l.status_code >= 400);
      const body = h('div', { class: 'log-body' },
        h('dl', { class: 'stats' },
          stat('Model', l.model + (l.model_id && l.model_id !== l.model ? ' (' + l.model_id + ')' : '')),
          stat('Provider', l.provider),
          stat('Attempt', String(attempt.get(l.id)) + (l.retry_of_log_id ? ' (retry of ' + l.retry_of_log_id + ')' : '')),
          stat('Prompt', (l.prompt || '—') + (l.depth ? ' · depth ' + l.depth : '') + (l.side ? ' · side ' + l.side.toUpperCase() : '')),
          stat('Tokens in', num(l.input_tokens)),
          stat('Cached', num(l.cached_tokens)),
          stat('Tokens out', num(l.output_tokens)),
          stat('Reasoning', num(l.reasoning_tokens)),
          stat('Cost', money(l.cost_total)),
          stat('Latency', (l.latency_ms || 0) + ' ms' + (l.time_to_first_token_ms ? ' · first token ' + l.time_to_first_token_ms + ' ms' : '')),
          stat('Finish', l.finish_reason || '—'),
          l.error ? stat('Error', l.error) : null),
        h('div', { class: 'bodies' }));
      const d = h('details', { class: 'log' + (failed ? ' failed' : ''), id: 'log-' + l.id, dataset: { log: l.id } },
        h('summary', null,
          h('span', { class: 'mono' }, l.model),
          h('span', { class: 'muted small' }, ' ' + num(l.input_tokens) + ' in · ' + num(l.output_tokens) + ' out · ' + money(l.cost_total) + ' · ' + (l.latency_ms || 0) + ' ms'),
          failed ? h('span', { class: 'flag flag-error' }, 'error') : null),
        body);
      d.addEventListener('toggle', () => {
        if (d.open) this.loadBodies(l.id, body.querySelector('.bodies'));
      });
      this.calls.append(d);
    }
  }

  openLog(id) {
    const d = document.getElementById('log-' + id);
    if (d) d.open = true;
  }

  async loadBodies(id, box) {
    if (box.dataset.loaded) return;
    box.dataset.loaded = '1';
    box.append(h('p', { class: 'muted small' }, 'Loading bodies…'));
    let l;
    try {
      l = await api('GET', this.base + '/logs/' + encodeURIComponent(id));
    } catch (e) {
      fill(box, h('p', { class: 'error' }, e.message));
      delete box.dataset.loaded;
      return;
    }
    fill(box, 
      h('details', { class: 'body request-body', open: true }, h('summary', null, 'Request body (redacted)'), h('pre', null, pretty(l.request_body) || '(none)')),
      h('details', { class: 'body response-body' }, h('summary', null, 'Response body (redacted)'), h('pre', null, pretty(l.response_body) || '(none)')));
  }

  async refreshTree() {
    const t = this.thread;
    const list = h('ul', { class: 'tree' });
    const kids = await this.childrenOf(t.id, 0);
    clear(this.tree);
    if (!kids.length) {
      this.tree.append(h('p', { class: 'muted small' }, 'No subagents.'));
    } else {
      for (const k of kids) list.append(k);
      this.tree.append(list);
    }
    if (t.parent_id) this.tree.prepend(h('p', { class: 'small' }, 'Started by ', h('a', { href: threadHref(t.parent_id), class: 'mono' }, t.parent_id)));
  }

  async childrenOf(id, level) {
    let kids = [];
    try {
      kids = (await api('GET', '/api/threads?include_children=true&sort=oldest&limit=100&parent=' + encodeURIComponent(id))).items;
    } catch {
      /* none shown */
    }
    const out = [];
    for (const k of kids || []) {
      const li = h('li', { dataset: { thread: k.id } },
        h('a', { href: threadHref(k.id) }, k.label || k.agent), ' ', badge('status', k.status),
        h('div', { class: 'muted mono small' }, k.agent + ' · ' + k.id));
      if (level < 3) {
        const sub = await this.childrenOf(k.id, level + 1);
        if (sub.length) li.append(h('ul', null, sub));
      }
      out.push(li);
    }
    return out;
  }
}

// duration formats milliseconds: "840 ms", "1.5 s", "2 m 5 s".
function duration(ms) {
  ms = Math.max(0, Math.round(ms));
  if (ms < 1000) return ms + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
}

function fact(label, value) {
  return h('span', { class: 'fact' }, h('span', { class: 'muted' }, label), ' ', value);
}

function stat(label, value) {
  return [h('dt', null, label), h('dd', null, value)];
}
