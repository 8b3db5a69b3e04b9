// api.js: the dashboard's only way to the daemon. The token lives in this
// tab's sessionStorage (never a cookie, never a URL) and goes out as
// Authorization: Bearer; a 401 anywhere forgets it and sends the user back
// to the login form (app.js listens for 'bd-unauthorized').

const KEY = 'banditd.token';

export function token() {
  return sessionStorage.getItem(KEY);
}

export function setToken(t) {
  sessionStorage.setItem(KEY, t);
}

export function clearToken() {
  sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, body) {
    const e = body && body.error ? body.error : {};
    super(e.message || 'HTTP ' + status);
    this.status = status;
    this.code = e.code || null;
    this.field = e.field || null;
  }
}

// Builds /v1/... with its query (undefined and null values left out).
export function url(path, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? path + '?' + s : path;
}

async function send(path, query, signal) {
  const t = token();
  if (!t) {
    window.dispatchEvent(new Event('bd-unauthorized'));
    throw new ApiError(401, null);
  }
  const r = await fetch(url(path, query), {
    headers: { Authorization: 'Bearer ' + t },
    cache: 'no-store',
    credentials: 'omit',
    signal,
  });
  if (r.status === 401) {
    clearToken();
    window.dispatchEvent(new Event('bd-unauthorized'));
  }
  return r;
}

// GET path as JSON; throws ApiError on a non-2xx answer.
export async function getJson(path, query, signal) {
  const r = await send(path, query, signal);
  let body = null;
  try {
    body = await r.json();
  } catch (e) {
    body = null;
  }
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}

// GET path as a Blob (the CSV export); throws ApiError on a non-2xx answer.
export async function getBlob(path, query, signal) {
  const r = await send(path, query, signal);
  if (!r.ok) {
    let body = null;
    try {
      body = await r.json();
    } catch (e) {
      body = null;
    }
    throw new ApiError(r.status, body);
  }
  return r.blob();
}
