// trials_table.js: one page of a study's trials (PAGE rows) with a state
// filter, previous/next through the API's `after` cursor, and the CSV
// export (fetched with the Authorization header, then saved from a Blob).
import { getJson, getBlob } from './api.js';
import { el, clear, fmtNum, fmtTime, attrList } from './dom.js';

const PAGE = 50;
function attrsOf(t) {
  const a = t.user_attrs;
  return a && typeof a === 'object' && !Array.isArray(a) ? Object.entries(a) : [];
}
const STATES = ['', 'running', 'completed', 'stopped', 'failed', 'expired'];

// The Value cell: the value, or with several objectives or constraints the
// "values" by metric (the first objective's first), as text.
function valueText(t, objective) {
  const v = t.values && typeof t.values === 'object' && !Array.isArray(t.values) ? Object.entries(t.values) : [];
  const own = t.value === undefined ? '—' : fmtNum(t.value);
  if (!v.length) return own;
  const rest = v.filter(([k]) => k !== objective).map(([k, x]) => k + '=' + fmtNum(x)).join(', ');
  return objective ? own + (rest ? ' · ' + rest : '') : rest;
}

export class TrialsTable {
  constructor(parent, study, signal) {
    this.study = study;
    this.signal = signal;
    this.cursors = [null];
    this.next = null;
    this.busy = false;
    this.params = (study.parameters || []).map((p) => p.name).slice(0, 12);
    // One objective: its metric leads the Value cell; several: every value is named.
    this.objective = study.objective && !(Array.isArray(study.objectives) && study.objectives.length > 1) ? study.objective.metric || 'value' : null;
    this.filter = el('select', { id: 'trial-state', 'aria-label': 'state' }, STATES.map((s) => el('option', { value: s, text: s || 'all states' })));
    this.prevB = el('button', { type: 'button', id: 'trials-prev', text: '← Previous' });
    this.nextB = el('button', { type: 'button', id: 'trials-next', text: 'Next →' });
    this.csvB = el('button', { type: 'button', id: 'download-csv', text: 'Download CSV' });
    this.status = el('span', { class: 'muted', id: 'trials-status' });
    this.tbody = el('tbody');
    const heads = ['ID', 'State', 'Budget', 'Value', 'Worker', 'Created', 'Finished'].concat(this.params);
    // The user_attrs column (a newer daemon's field) shows only while the page holds some.
    this.attrsHead = el('th', { class: 'attrs-col', text: 'User attrs', hidden: true });
    parent.append(el('section', { class: 'panel wide' },
      el('h3', { text: 'Trials' }),
      el('div', { class: 'toolbar' }, this.filter, this.prevB, this.nextB, this.csvB, this.status),
      el('div', { class: 'scroll' }, el('table', { id: 'trials', class: 'grid compact' },
        el('thead', null, el('tr', null, heads.map((h) => el('th', { text: h })), this.attrsHead)), this.tbody))));
    this.filter.addEventListener('change', () => {
      this.cursors = [null];
      this.load();
    });
    this.prevB.addEventListener('click', () => {
      if (this.cursors.length > 1) this.cursors.pop();
      this.load();
    });
    this.nextB.addEventListener('click', () => {
      if (this.next !== null) this.cursors.push(this.next);
      this.load();
    });
    this.csvB.addEventListener('click', () => this.download());
  }

  row(t, withAttrs) {
    const cfg = t.config || {};
    const attrs = attrsOf(t);
    return el('tr', { class: 'st-' + t.state, dataset: { trial: t.id } },
      el('td', { class: 'num', text: t.id }),
      el('td', { text: t.state + (t.resume_from ? ' (promoted)' : '') }),
      el('td', { class: 'num', text: fmtNum(t.budget) }),
      el('td', { class: 'num value-cell' }, valueText(t, this.objective), t.feasible === false ? el('span', { class: 'infeasible', text: ' infeasible' }) : null),
      el('td', { text: t.worker || '' }),
      el('td', { text: fmtTime(t.created_at) }),
      el('td', { text: fmtTime(t.finished_at) }),
      this.params.map((p) => el('td', { text: cfg[p] === undefined ? '' : typeof cfg[p] === 'number' ? fmtNum(cfg[p]) : String(cfg[p]) })),
      withAttrs ? el('td', { class: 'attrs-cell' }, attrs.length ? attrList(attrs, 'user-attrs') : null) : null);
  }

  // Reloads the current page (also the live refresh).
  async load() {
    if (this.busy) return;
    this.busy = true;
    try {
      const r = await getJson('/v1/studies/' + this.study.id + '/trials',
        { limit: PAGE, after: this.cursors[this.cursors.length - 1], state: this.filter.value }, this.signal);
      const list = r.trials || [];
      this.next = r.next_after === undefined ? null : r.next_after;
      const withAttrs = list.some((t) => attrsOf(t).length > 0);
      this.attrsHead.hidden = !withAttrs;
      clear(this.tbody).append(...list.map((t) => this.row(t, withAttrs)));
      if (!list.length) this.tbody.append(el('tr', null, el('td', { colspan: 7 + this.params.length, class: 'muted', text: 'No trials.' })));
      this.status.textContent = 'page ' + this.cursors.length + ' · ' + list.length + ' rows';
      this.prevB.disabled = this.cursors.length <= 1;
      this.nextB.disabled = this.next === null;
    } catch (e) {
      if (e.name !== 'AbortError') this.status.textContent = 'Cannot load trials: ' + e.message;
    } finally {
      this.busy = false;
    }
  }

  async download() {
    this.csvB.disabled = true;
    try {
      const blob = await getBlob('/v1/studies/' + this.study.id + '/trials.csv', { state: this.filter.value }, this.signal);
      const href = URL.createObjectURL(blob);
      const a = el('a', { href, download: 'study-' + this.study.id + '-trials.csv' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(href), 10000);
    } catch (e) {
      if (e.name !== 'AbortError') this.status.textContent = 'CSV export failed: ' + e.message;
    } finally {
      this.csvB.disabled = false;
    }
  }
}
