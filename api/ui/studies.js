// studies.js: the list of the caller's studies, one page (PAGE rows) at a
// time through the API's `after` cursor, redrawn every POLL_MS from the
// same page only. Checkboxes pick studies to compare (kept across pages and
// refreshes); "Compare" opens #/compare/<ids> (compare.js).
import { getJson } from './api.js';
import { MAX_STUDIES } from './compare.js';
import { el, clear, fmtNum, fmtAgo, fmtTime } from './dom.js';

const PAGE = 50;
const POLL_MS = 3000;
const STATES = ['running', 'completed', 'stopped', 'failed', 'expired'];

function trialCell(t) {
  if (!t) return el('td', { text: '—' });
  const parts = STATES.filter((s) => t[s]).map((s) => el('span', { class: 'pill st-' + s, title: s, text: s + ' ' + t[s] }));
  return el('td', { class: 'trial-counts' }, el('b', { text: String(t.total || 0) }), ' ', parts);
}

// The state cell; `paused` (a newer daemon's field) shown when true.
export function stateCell(s) {
  return el('td', null, el('span', { class: 'state state-' + s.state, text: s.state }),
    s.paused === true && s.state !== 'paused' ? [' ', el('span', { class: 'pill paused', text: 'paused' })] : null);
}

function row(s, now, picked, onPick) {
  const inc = s.incumbent;
  const last = s.last_activity_at || s.created_at;
  const box = el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'compare study ' + s.id, checked: picked.has(s.id) });
  box.addEventListener('change', () => onPick(s.id, box.checked));
  return el('tr', { dataset: { study: s.id } },
    el('td', null, box),
    el('td', { class: 'num', text: s.id }),
    el('td', null, el('a', { class: 'study-link', href: '#/study/' + s.id, text: s.name })),
    el('td', { text: s.scheduler ? s.scheduler.name : '' }),
    stateCell(s),
    trialCell(s.trials),
    // A study with several objectives has no single best: its front's hypervolume, when the answer has it.
    el('td', { class: 'num', title: inc ? 'trial ' + inc.trial_id : typeof s.hypervolume === 'number' ? 'hypervolume of the Pareto front' : '',
      text: inc ? fmtNum(inc.value) : typeof s.hypervolume === 'number' ? 'HV ' + fmtNum(s.hypervolume) : '—' }),
    el('td', { title: fmtTime(last), text: fmtAgo(last, now) }));
}

export function studiesView(root) {
  const ctl = new AbortController();
  const cursors = [null]; // after-cursor of each page seen; the last is the current page
  let next = null;
  let timer = null;
  let busy = false;

  const status = el('p', { class: 'muted', id: 'studies-status' });
  const tbody = el('tbody');
  const prev = el('button', { type: 'button', text: '← Previous' });
  const nextB = el('button', { type: 'button', text: 'Next →' });
  const picked = new Set(); // study ids ticked for comparison, in tick order
  const compareB = el('button', { type: 'button', id: 'compare', text: 'Compare' });
  const pickNote = el('span', { class: 'muted', id: 'compare-note' });
  const showPicked = () => {
    compareB.disabled = picked.size < 2 || picked.size > MAX_STUDIES;
    pickNote.textContent = picked.size ? picked.size + ' selected' + (picked.size > MAX_STUDIES ? ' (at most ' + MAX_STUDIES + ')' : '') : 'tick two or more studies to compare';
  };
  const onPick = (id, on) => {
    if (on) picked.add(id);
    else picked.delete(id);
    showPicked();
  };
  showPicked();
  compareB.addEventListener('click', () => {
    location.hash = '#/compare/' + [...picked].join(',');
  });
  const table = el('table', { id: 'studies', class: 'grid' },
    el('thead', null, el('tr', null, ['', 'ID', 'Name', 'Scheduler', 'State', 'Trials', 'Best value', 'Last activity'].map((h) => el('th', { text: h })))),
    tbody);
  delete root.dataset.loaded;
  clear(root).append(el('h1', { text: 'Studies' }), status, el('div', { class: 'toolbar' }, compareB, pickNote), table, el('div', { class: 'pager' }, prev, nextB));

  async function load() {
    if (busy) return;
    busy = true;
    try {
      const after = cursors[cursors.length - 1];
      const r = await getJson('/v1/studies', { limit: PAGE, after }, ctl.signal);
      const list = r.studies || [];
      next = r.next_after === undefined ? null : r.next_after;
      const now = Date.now() / 1000;
      clear(tbody).append(...list.map((s) => row(s, now, picked, onPick)));
      if (!list.length) tbody.append(el('tr', null, el('td', { colspan: 8, class: 'muted', text: 'No studies yet.' })));
      status.textContent = list.length + ' studies on this page · refreshed ' + new Date().toLocaleTimeString();
      prev.disabled = cursors.length <= 1;
      nextB.disabled = next === null;
    } catch (e) {
      if (e.name !== 'AbortError') status.textContent = 'Cannot load the studies: ' + e.message;
    } finally {
      busy = false;
    }
  }

  prev.addEventListener('click', () => {
    if (cursors.length > 1) cursors.pop();
    load();
  });
  nextB.addEventListener('click', () => {
    if (next !== null) cursors.push(next);
    load();
  });
  load();
  timer = setInterval(() => {
    if (!document.hidden) load();
  }, POLL_MS);
  return () => {
    clearInterval(timer);
    ctl.abort();
  };
}
