// dom.js: building the page from data without ever parsing data as HTML.
// el() sets text through textContent and attributes through setAttribute,
// so a study called <img src=x onerror=alert(1)> is shown as those letters.

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    } else if (k === 'text') {
      e.textContent = String(v);
    } else if (k === 'dataset') {
      Object.assign(e.dataset, v);
    } else if (k === 'class') {
      e.className = v;
    } else if (v === true) {
      e.setAttribute(k, '');
    } else {
      e.setAttribute(k, String(v));
    }
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(e, c);
    else e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(e) {
  while (e.firstChild) e.removeChild(e.firstChild);
  return e;
}

// A number as a person reads it: 4 significant digits, integers as they are.
export function fmtNum(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e9) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

export function fmtAgo(unixSeconds, now) {
  if (!unixSeconds) return '—';
  const s = Math.max(0, (now || Date.now() / 1000) - unixSeconds);
  if (s < 60) return Math.round(s) + ' s ago';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return (s / 3600).toFixed(1) + ' h ago';
  return (s / 86400).toFixed(1) + ' d ago';
}

export function fmtTime(unixSeconds) {
  if (!unixSeconds) return '—';
  return new Date(unixSeconds * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// A config as "a=1, b=sgd" (text only).
export function fmtConfig(config) {
  if (!config || typeof config !== 'object') return '';
  return Object.entries(config)
    .map(([k, v]) => k + '=' + (typeof v === 'number' ? fmtNum(v) : String(v)))
    .join(', ');
}

// A generic, collapsible view of any JSON value (the fallback of the
// scheduler view); depth-limited so a large state stays cheap to draw.
export function jsonTree(value, depth) {
  depth = depth || 0;
  if (value === null || typeof value !== 'object') {
    return el('span', { class: 'json-' + (value === null ? 'null' : typeof value), text: typeof value === 'number' ? fmtNum(value) : JSON.stringify(value) });
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const shown = entries.slice(0, 200);
  const list = el('ul', { class: 'json' },
    shown.map(([k, v]) => el('li', null, el('span', { class: 'json-key', text: k + ': ' }), jsonTree(v, depth + 1))),
    entries.length > shown.length ? el('li', { class: 'muted', text: '… ' + (entries.length - shown.length) + ' more' }) : null);
  const label = Array.isArray(value) ? '[' + entries.length + ']' : '{' + entries.length + '}';
  return el('details', { open: depth < 1 }, el('summary', { text: label }), list);
}

const ATTR_KEYS = 20; // keys shown per list; the rest counted
const ATTR_CHARS = 300; // of one value (up to 16 KiB each): the rest in its tooltip

// key: value pairs (user text: trial user_attrs, study metadata) as a small
// definition list, values as JSON text when not strings.
export function attrList(entries, cls) {
  const shown = entries.slice(0, ATTR_KEYS);
  const dd = (v) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > ATTR_CHARS ? el('dd', { text: s.slice(0, ATTR_CHARS) + '…', title: s.slice(0, 4000) }) : el('dd', { text: s });
  };
  return el('dl', { class: 'kv attrs ' + cls },
    shown.map(([k, v]) => [el('dt', { text: k }), dd(v)]),
    entries.length > shown.length ? [el('dt', { class: 'muted', text: '…' }), el('dd', { class: 'muted', text: (entries.length - shown.length) + ' more' })] : null);
}
