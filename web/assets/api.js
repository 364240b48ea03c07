// api.js — the HTTP API from the browser: requests with the key kept in sessionStorage, and a
// Server-Sent Events reader over fetch (it sends the key and Last-Event-ID itself, and resumes
// after a dropped connection from the last event it saw).

const KEY = 'weft.api_key';

// key is the API key this tab entered ("" when none: a --no-auth server needs none).
export function key() {
  return sessionStorage.getItem(KEY) || '';
}

export function setKey(k) {
  if (k) sessionStorage.setItem(KEY, k);
  else sessionStorage.removeItem(KEY);
}

// APIError is an error answer of the API: status, code and message.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};

// whenUnauthorized sets what happens when the API refuses the key (the page asks for one).
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const k = key();
  if (k) h.Authorization = 'Bearer ' + k;
  return h;
}

// api sends a request and returns the decoded JSON answer; an error answer throws APIError.
export async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!r.ok) {
    const e = (data && data.error) || {};
    if (r.status === 401) onUnauthorized(e.message || 'unauthorized');
    throw new APIError(r.status, e.code || 'http_' + r.status, e.message || r.statusText);
  }
  return data;
}

// blobURL fetches a file with the key and returns an object URL for it (for <img> and links,
// which cannot send the key themselves).
export async function blobURL(path) {
  const r = await fetch(path, { headers: headers({}) });
  if (!r.ok) throw new APIError(r.status, 'http_' + r.status, r.statusText);
  return URL.createObjectURL(await r.blob());
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// A page the browser keeps in its back/forward cache stays alive, and so would its streams: each
// holds one of the six connections a browser opens to a host, and after a few pages the next
// page's requests wait for ever. Streams end when the page is hidden; a page shown again from the
// cache reloads, so that it is current.
const open = new Set();
addEventListener('pagehide', () => {
  for (const s of open) s.close();
});
addEventListener('pageshow', (ev) => {
  if (ev.persisted) location.reload();
});

// stream reads an SSE route and calls onEvent(type, data, id) per event and onState(state) with
// "live", "reconnecting" or "closed". When the connection drops it reconnects with Last-Event-ID
// set to the last id seen, so that recorded events are neither lost nor repeated; routes without
// ids (the global stream) get onState("live") again after which the caller refetches.
// after is the cursor to start from (null: the route's default).
export function stream(path, { after = null, onEvent, onState = () => {} }) {
  let last = after;
  let closed = false;
  let ctrl = null;
  (async () => {
    let delay = 250;
    while (!closed) {
      ctrl = new AbortController();
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (last !== null && last !== undefined) h['Last-Event-ID'] = String(last);
        const r = await fetch(path, { headers: h, signal: ctrl.signal, cache: 'no-store' });
        if (r.status === 401) {
          onUnauthorized('unauthorized');
          onState('closed');
          return;
        }
        if (!r.ok) throw new Error('HTTP ' + r.status);
        onState('live');
        delay = 250;
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let type = 'message';
            let id = null;
            let data = '';
            for (const line of block.split('\n')) {
              if (line === '' || line.startsWith(':')) continue;
              const c = line.indexOf(':');
              const field = c < 0 ? line : line.slice(0, c);
              let v = c < 0 ? '' : line.slice(c + 1);
              if (v.startsWith(' ')) v = v.slice(1);
              if (field === 'event') type = v;
              else if (field === 'id') id = v;
              else if (field === 'data') data += (data ? '\n' : '') + v;
            }
            if (id !== null) last = Number(id);
            if (data) {
              let payload;
              try {
                payload = JSON.parse(data);
              } catch {
                continue;
              }
              try {
                onEvent(type, payload, id);
              } catch (err) {
                console.error('weft: event handler', err);
              }
            }
          }
        }
      } catch (err) {
        if (closed) break;
      }
      if (closed) break;
      onState('reconnecting');
      await sleep(delay);
      delay = Math.min(delay * 2, 4000);
    }
    onState('closed');
  })();
  const handle = {
    close() {
      closed = true;
      open.delete(handle);
      if (ctrl) ctrl.abort();
    },
    // drop ends the current connection; the stream reconnects from its last event.
    drop() {
      if (ctrl) ctrl.abort();
    },
    get last() {
      return last;
    },
  };
  open.add(handle);
  return handle;
}
