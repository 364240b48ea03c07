// The A2A reference JavaScript SDK's client against `weft serve`. Env: SDK (the SDK's dist
// folder), BASE (the server's URL), KEY (an API key), MODE (tour, kill or interrupt), AGENT (the
// agent, chat unless set), IF_BUSY (interrupt's policy). It prints one JSON line per check; the
// Go test reads them.
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';

const sdk = await import(pathToFileURL(process.env.SDK + '/index.js').href);
const cl = await import(pathToFileURL(process.env.SDK + '/client/index.js').href);
const { Role, TaskState } = sdk;
const base = process.env.BASE, key = process.env.KEY;

const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set('Authorization', 'Bearer ' + key);
  return fetch(url, { ...init, headers });
};
const factory = new cl.ClientFactory(cl.ClientFactoryOptions.createFrom(cl.ClientFactoryOptions.default, {
  transports: [new cl.JsonRpcTransportFactory({ fetchImpl: authFetch })],
  cardResolver: new cl.DefaultAgentCardResolver({ fetchImpl: authFetch }),
}));

const out = (o) => console.log(JSON.stringify(o));
const msg = (text, extra = {}) => ({
  messageId: randomUUID(), role: Role.ROLE_USER, contextId: '', taskId: '', extensions: [], referenceTaskIds: [],
  metadata: undefined, parts: [{ content: { $case: 'text', value: text }, filename: '', mediaType: '', metadata: undefined }], ...extra,
});
const req = (m, configuration) => ({ tenant: '', message: m, configuration, metadata: undefined });
const text = (m) => (m?.parts || []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const state = (s) => TaskState[s];
// ev describes a stream response: its kind, state, event seq and text.
const ev = (r) => {
  const p = r.payload;
  const v = p?.value;
  const st = p?.$case === 'task' ? v.status : p?.$case === 'statusUpdate' ? v.status : undefined;
  return { kind: p?.$case, state: st ? state(st.state) : undefined, seq: v?.metadata?.weft_event_seq, text: text(st?.message), task: v?.id || v?.taskId,
    event: v?.metadata?.weft_event, meta: v?.metadata };
};

const client = await factory.createFromUrl(base + '/a2a/' + (process.env.AGENT || 'chat') + '/.well-known/agent-card.json', '');

if (process.env.MODE === 'tour') {
  const card = await client.getAgentCard();
  out({ check: 'card', name: card.name, streaming: card.capabilities?.streaming, url: card.supportedInterfaces?.[0]?.url,
    binding: card.supportedInterfaces?.[0]?.protocolBinding, skills: card.skills.map((s) => s.id), schemes: Object.keys(card.securitySchemes || {}) });

  const first = await client.sendMessage(req(msg('The codeword is heron.')));
  out({ check: 'send', state: state(first.status.state), text: text(first.status.message), task: first.id, context: first.contextId });

  const got = await client.getTask({ tenant: '', id: first.id, historyLength: undefined });
  out({ check: 'get', state: state(got.status.state), history: got.history.length, task: got.id });

  const second = await client.sendMessage(req(msg('What was the codeword?', { contextId: first.contextId })));
  out({ check: 'context', state: state(second.status.state), text: text(second.status.message), context: second.contextId, task: second.id });

  const streamed = [];
  for await (const r of client.sendMessageStream(req(msg('Stream, with a tool.')))) streamed.push(ev(r));
  out({ check: 'stream', events: streamed });

  // Cancel: a slow answer, canceled while the model works.
  let slowTask;
  for await (const r of client.sendMessageStream(req(msg('Take your time.'), { returnImmediately: false, acceptedOutputModes: [], historyLength: undefined, taskPushNotificationConfig: undefined }))) {
    const e = ev(r);
    if (e.state === 'TASK_STATE_WORKING') { slowTask = e.task; break; }
  }
  const canceled = await client.cancelTask({ tenant: '', id: slowTask, metadata: undefined });
  out({ check: 'cancel', state: state(canceled.status.state), task: canceled.id });

  // A dropped stream, then a resubscription that resumes it.
  const ac = new AbortController();
  const before = [];
  try {
    for await (const r of client.sendMessageStream(req(msg('Drop me.')), { signal: ac.signal })) {
      before.push(ev(r));
      if (before.length === 2) ac.abort();
    }
  } catch (e) { /* the abort */ }
  const after = [];
  for await (const r of client.resubscribeTask({ tenant: '', id: before[0].task })) after.push(ev(r));
  out({ check: 'resubscribe', before, after });

  const list = await client.listTasks({ tenant: '', contextId: first.contextId, status: 0, pageSize: undefined, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
  out({ check: 'list', ids: list.tasks.map((t) => t.id) });
}

if (process.env.MODE === 'kill') {
  const seen = [];
  let task;
  try {
    for await (const r of client.sendMessageStream(req(msg('Survive a crash.')))) {
      const e = ev(r);
      seen.push(e);
      task = task || e.task;
      if (e.state === 'TASK_STATE_WORKING' && e.kind === 'statusUpdate') out({ check: 'kill-now', task });
    }
  } catch (e) {
    out({ check: 'dropped', error: String(e.message || e).slice(0, 200) });
  }
  const after = [];
  for (let i = 0; i < 150; i++) {
    try {
      for await (const r of client.resubscribeTask({ tenant: '', id: task })) after.push(ev(r));
      break;
    } catch (e) {
      await new Promise((res) => setTimeout(res, 200));
    }
  }
  out({ check: 'kill', before: seen, after });
}

// Double-texting: a first message makes the context's thread, whose default if_busy is set to
// IF_BUSY (or the third message carries it, IF_BUSY_VIA=metadata); a second streams a slow answer, and once its tool completed a third message is sent
// in the context while the answer streams.
if (process.env.MODE === 'interrupt') {
  const first = await client.sendMessage(req(msg('hello')));
  // The policy is the thread's default, or (IF_BUSY_VIA=metadata) the third message's own.
  const viaMetadata = process.env.IF_BUSY_VIA === 'metadata';
  if (!viaMetadata) {
    const patched = await authFetch(base + '/api/threads/' + first.contextId, {
      method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ if_busy: process.env.IF_BUSY }),
    });
    if (!patched.ok) throw new Error('PATCH: ' + patched.status + ' ' + (await patched.text()));
  }
  const events = [];
  let third;
  for await (const r of client.sendMessageStream(req(msg('tell a story', { contextId: first.contextId })))) {
    const e = ev(r);
    events.push(e);
    if (!third && e.event === 'tool_completed') {
      await new Promise((res) => setTimeout(res, 300)); // the story is streaming by now
      third = client.sendMessage(req(msg('a haiku please', { contextId: first.contextId,
        metadata: viaMetadata ? { weft_if_busy: process.env.IF_BUSY } : undefined })));
    }
  }
  const answer = await third;
  const last = events[events.length - 1];
  const story = await client.getTask({ tenant: '', id: last.task, historyLength: undefined });
  out({ check: 'interrupted', state: last.state, text: last.text, task: last.task, history: story.history.length,
    events: [{ ...last, meta: undefined, by: last.meta?.weft_interrupted_by, rolledBack: last.meta?.weft_rolled_back,
      removed: last.meta?.weft_removed_message_ids, stop: last.meta?.weft_stop_reason }] });
  out({ check: 'third', state: state(answer.status.state), text: text(answer.status.message), context: answer.contextId });
}
