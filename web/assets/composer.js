// composer.js — the thread page's message composer: text (Ctrl+Enter sends), attachments, the
// role, and what the message does if the thread is running (if_busy: the thread's default,
// queue, reject, interrupt or rollback; docs/http-api.md). A refusal (reject while a run is in
// progress) shows as the action's error, naming the run.
import { h } from './dom.js';

// IF_BUSY are the choices of the if_busy control: "" leaves the thread's default.
const IF_BUSY = [
  ['', 'if busy: thread default'],
  ['queue', 'if busy: queue'],
  ['reject', 'if busy: reject'],
  ['interrupt', 'if busy: interrupt'],
  ['rollback', 'if busy: rollback'],
];

// buildComposer returns the composer form; act(method, path, body) performs an action on the
// thread (and shows its error).
export function buildComposer(act) {
  const text = h('textarea', { id: 'message', rows: 3, placeholder: 'Send a message… (Ctrl+Enter)' });
  const files = h('input', { type: 'file', id: 'files', multiple: true });
  const role = h('select', { id: 'role' }, ['user', 'assistant', 'system'].map((r) => h('option', { value: r }, r)));
  const ifBusy = h('select', { id: 'if-busy', title: 'What the message does when a run of the thread is in progress' },
    IF_BUSY.map(([v, label]) => h('option', { value: v }, label)));
  const status = h('span', { class: 'muted small', id: 'send-status' });
  const send = h('button', { class: 'primary', id: 'send', type: 'submit' }, 'Send');
  const form = h('form', { class: 'card composer', id: 'composer' }, text,
    h('div', { class: 'row' }, h('label', { class: 'file-pick' }, files), role, ifBusy, status, h('span', { class: 'grow' }), send));
  text.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) form.requestSubmit();
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const attachments = [];
    for (const f of files.files) attachments.push({ name: f.name, mime_type: f.type || '', data: await base64(f) });
    if (!text.value.trim() && !attachments.length) return;
    send.disabled = true;
    status.textContent = 'sending…';
    const body = { content: text.value, role: role.value, attachments };
    if (ifBusy.value) body.if_busy = ifBusy.value;
    try {
      const r = await act('POST', '/messages', body);
      status.textContent = r.status;
      text.value = '';
      files.value = '';
    } catch {
      status.textContent = '';
    } finally {
      send.disabled = false;
    }
  });
  return form;
}

function base64(file) {
  return new Promise((res, rej) => {
    const r = new FileReader();
    r.onload = () => res(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => rej(r.error);
    r.readAsDataURL(file);
  });
}
