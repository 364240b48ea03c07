// dom.js — building elements. Children that are not Nodes become text nodes: nothing from a
// thread is ever parsed as HTML.

// h builds an element: attrs sets attributes (class, dataset, on* listeners, boolean flags);
// children are Nodes or values shown as text; null, undefined and false are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// fill replaces an element's children, with h's rules for them.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// clear empties an element.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// threadHref is the inspector's link to a thread.
export function threadHref(id) {
  return '/threads/' + encodeURIComponent(id);
}

// pretty formats JSON text (or a value) for reading; text that is not JSON stays as it is.
export function pretty(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}

// ago says how long ago a time was, briefly.
export function ago(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return Math.floor(s) + 's ago';
  if (s < 3600) return Math.floor(s / 60) + 'm ago';
  if (s < 86400) return Math.floor(s / 3600) + 'h ago';
  return Math.floor(s / 86400) + 'd ago';
}

// money formats a cost in US dollars; unknown stays a dash.
export function money(v) {
  if (v === null || v === undefined) return '—';
  if (v === 0) return '$0';
  if (v < 0.01) return '$' + v.toFixed(5);
  return '$' + v.toFixed(v < 1 ? 4 : 2);
}

// num formats a count with thousands separators.
export function num(v) {
  return String(Math.round(v || 0)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

// badge is a small label whose class follows the value (status-running, status-failed, …).
export function badge(kind, value) {
  return h('span', { class: 'badge ' + kind + '-' + String(value || 'none').replace(/[^a-z0-9_-]/gi, '') }, value || '—');
}
