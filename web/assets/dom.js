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
  return h('span', { class: 'badge ' + kind + '-' + String(value || 'none').replace(/[^a-z0-9_-]/gi, ''),
    title: GLOSSARY[value] || null }, value || '—');
}

// GLOSSARY explains Weft's words where the pages use them (as tooltips).
export const GLOSSARY = {
  'side A': 'Side A is the agent\'s first side: in an ai_human agent, the AI; in a dual_ai agent, the first of the two AIs.',
  'side B': 'Side B is the other side of the conversation: the human in an ai_human agent (messages you send are side B), or the second AI in a dual_ai agent.',
  owner: 'The user the thread belongs to: only they (and admins) can see it, send to it or run it.',
  approval: 'A tool declared with approval: required waits for a person to approve or deny each call; the run stops with awaiting_approval until then.',
  step: 'A step is one model call and the tool calls it asked for; a run is the steps from a message until the thread stops.',
  'sub-prompt': 'A prompt called as a tool: its messages are nested under the call (depth 1 and below) and its reply is the tool\'s result.',
  subagent: 'A subagent is another agent called as a tool: it runs in a thread of its own, linked to this one.',
  silent: 'A silent message is kept in the thread but not shown to the other side\'s model.',
  continue: 'Continue runs the thread again from where it stopped, as the next side (or the side you pick) without a new message.',
  timeline: 'Each step\'s model call and tool calls, from the thread\'s model call log and tool call records; a bar spans its time.',
  a2a: 'Agent2Agent (A2A) tasks: a task is the work the thread does on one user message, up to the next run stop (docs/a2a.md).',
  // statuses and stop reasons
  idle: 'Nothing is running; the thread waits for a message.',
  running: 'A run is under way.',
  awaiting_human: 'The run stopped because it is the human side\'s turn: send a message to go on.',
  awaiting_approval: 'The run waits for a person to approve or deny a tool call.',
  stopped: 'Stopped by a user; a new message or Continue runs it again.',
  paused: 'Paused at its budget; raise the budget to go on.',
  failed: 'The last run ended with an error; its text is shown at the end of the conversation.',
  terminated: 'Terminated: the thread takes no more runs.',
  stop_on_response: 'The side replied and its prompt stops on a response: the run ended normally.',
  step_error: 'A step failed (the model call, a hook or the engine): the error is shown at the end of the conversation.',
  aborted_by_user: 'A user pressed Stop (or called POST /api/threads/{id}/stop).',
  stop_tool: 'A tool declared to stop the run was called: the run ended normally.',
  max_session_turns: 'The session reached the agent\'s maxSessionTurns: the run ended normally.',
  max_side_steps: 'The side reached its maxSteps without finishing its turn.',
  max_total_steps: 'The run reached the agent\'s cap on steps.',
  context_too_long: 'The request did not fit the model\'s context window, even after the prompt\'s context strategy shrank it.',
  repeated_tool_error: 'The same tool call failed repeatedly; the run stopped rather than loop.',
  hook_blocked: 'A hook blocked the run.',
  budget_exceeded: 'The thread reached its spending budget.',
  interrupted: 'A message sent with if_busy: interrupt stopped the run; a new run answers it.',
};

// term is a word with its explanation as a tooltip (title), or the plain word when the glossary
// has none.
export function term(word, shown) {
  const text = shown === undefined ? word : shown;
  const tip = GLOSSARY[word];
  return tip ? h('span', { class: 'term', title: tip, tabindex: 0 }, text) : text;
}
