// evals.js — eval runs (GET /api/evals): each eval's pass rate over its runs, newest first, and
// one run's cases (GET /api/evals/{id}) with their verdicts, failing expectations and threads.
import { h, fill, threadHref, ago, money, badge } from './dom.js';
import { api, APIError } from './api.js';
import { notFound } from './app.js';

export async function showEvals(main) {
  document.title = 'Evals · Weft inspector';
  let list;
  try {
    list = await api('GET', '/api/evals?limit=200');
  } catch (e) {
    if (!(e instanceof APIError && e.status === 401)) fill(main, h('p', { class: 'error pad' }, 'Could not load the eval runs: ' + e.message));
    return;
  }
  const runs = list.items || [];
  const byEval = new Map();
  for (const r of runs) {
    if (!byEval.has(r.name)) byEval.set(r.name, []);
    byEval.get(r.name).push(r);
  }
  const sections = [];
  for (const [name, rs] of byEval) {
    // Pass rate over time: one bar per run, oldest on the left.
    const trend = h('div', { class: 'trend', title: 'pass rate per run, oldest first' },
      rs.slice().reverse().map((r) => {
        const bar = h('span', { class: 'bar' + (r.failed ? ' failing' : ''), title: r.id + ': ' + pct(r) });
        bar.style.height = Math.round(rate(r) * 100) + '%'; // through the CSSOM: the CSP refuses style attributes
        return bar;
      }));
    sections.push(h('section', { class: 'card eval-runs', 'data-eval': name },
      h('div', { class: 'row' }, h('h2', null, name), h('span', { class: 'muted' }, ' · agent ' + rs[0].agent), h('span', { class: 'grow' }), trend),
      h('table', { class: 'threads' },
        h('thead', null, h('tr', null, h('th', null, 'Run'), h('th', null, 'Verdict'), h('th', { class: 'num' }, 'Pass rate'),
          h('th', { class: 'num' }, 'Cost'), h('th', { class: 'num' }, 'Judges'), h('th', { class: 'num' }, 'Started'))),
        h('tbody', null, rs.map((r) => h('tr', { 'data-run': r.id },
          h('td', null, h('a', { href: '/evals/' + encodeURIComponent(r.id), class: 'mono' }, r.id), r.model ? h('span', { class: 'muted' }, ' · ' + r.model) : null),
          h('td', null, badge('verdict', r.failed ? 'fail' : 'pass'), ' ' + r.passed + ' passed, ' + r.failed + ' failed'),
          h('td', { class: 'num' }, pct(r)),
          h('td', { class: 'num' }, money(r.cost_usd)),
          h('td', { class: 'num' }, money(r.judge_cost_usd)),
          h('td', { class: 'num' }, ago(r.started_at))))))));
  }
  fill(main, h('h1', { class: 'pad' }, 'Evals'),
    sections.length ? sections : h('p', { class: 'muted pad', id: 'no-evals' }, 'No eval runs yet: run weft eval, or POST /api/evals.'));
}

function rate(r) {
  const n = r.passed + r.failed;
  return n ? r.passed / n : 0;
}

function pct(r) {
  return Math.round(rate(r) * 100) + '%';
}

export async function showEvalRun(main, id) {
  let rep;
  try {
    rep = await api('GET', '/api/evals/' + encodeURIComponent(id));
  } catch (e) {
    if (e instanceof APIError && e.status === 404) notFound('Eval run', 'No eval run ' + id + ' is stored here.');
    else if (!(e instanceof APIError && e.status === 401)) fill(main, h('p', { class: 'error pad' }, 'Could not load the run: ' + e.message));
    return;
  }
  document.title = rep.name + ' · Evals · Weft inspector';
  const b = rep.baseline;
  fill(main,
    h('section', { class: 'card' },
      h('div', { class: 'row' }, h('h1', null, rep.name), badge('verdict', rep.failed ? 'fail' : 'pass')),
      h('div', { class: 'facts' },
        h('span', { class: 'fact' }, h('span', { class: 'muted' }, 'Run'), ' ', h('span', { class: 'mono' }, rep.id)),
        h('span', { class: 'fact' }, h('span', { class: 'muted' }, 'Agent'), ' ', rep.agent),
        h('span', { class: 'fact' }, h('span', { class: 'muted' }, 'Passed'), ' ' + rep.passed + ' of ' + (rep.passed + rep.failed)),
        h('span', { class: 'fact' }, h('span', { class: 'muted' }, 'Cost'), ' ', money(rep.cost_usd)),
        h('span', { class: 'fact' }, h('span', { class: 'muted' }, 'Judges'), ' ', money(rep.judge_cost_usd)),
        h('span', { class: 'fact' }, h('span', { class: 'muted' }, 'Started'), ' ', ago(rep.started_at))),
      b ? h('div', { class: 'stop', id: 'baseline' }, 'Against ', h('a', { href: '/evals/' + encodeURIComponent(b.run), class: 'mono' }, b.run), ': ',
        (b.regressed || []).length + ' regressed', (b.regressed || []).length ? ' (' + b.regressed.join(', ') + ')' : '', ', ',
        (b.improved || []).length + ' improved', (b.improved || []).length ? ' (' + b.improved.join(', ') + ')' : '') : null),
    h('section', { class: 'card flush' },
      h('table', { class: 'threads', id: 'eval-cases' },
        h('thead', null, h('tr', null, h('th', null, 'Case'), h('th', null, 'Verdict'), h('th', null, 'Failure'),
          h('th', { class: 'num' }, 'Cost'), h('th', { class: 'num' }, 'Latency'), h('th', null, 'Threads'))),
        h('tbody', null, (rep.cases || []).map((c) => h('tr', { 'data-case': c.name, class: c.pass ? 'pass' : 'fail' },
          h('td', null, c.name),
          h('td', null, badge('verdict', c.pass ? 'pass' : 'fail'), c.runs > 1 ? ' ' + c.passes + '/' + c.runs + (c.flaky ? ' flaky' : '') : ''),
          h('td', { class: 'failure' }, c.failure || ''),
          h('td', { class: 'num' }, money(c.cost_usd)),
          h('td', { class: 'num' }, c.latency_ms + ' ms'),
          h('td', null, (c.details || []).filter((d) => d.thread_id).map((d) =>
            h('a', { href: threadHref(d.thread_id), class: 'mono', title: 'run ' + d.repetition }, '#' + d.repetition + ' ')))))))));
}
