// sched_view.js: the scheduler's own view of a study (its `scheduler.state`,
// written by each scheduler's describe() in server/sched/) drawn readably:
// Hyperband/Successive Halving/ASHA brackets and rungs, rising_bandits arms
// with their bounds and eliminations, spc testers with caps and LCBs, bo_bos
// stop verdicts; anything else as a JSON tree. Every value goes in as text.
import { el, fmtNum, fmtConfig, jsonTree } from './dom.js';

function cell(v) {
  if (v === null || v === undefined) return el('td', { class: 'muted', text: '—' });
  if (typeof v === 'number') return el('td', { class: 'num', text: fmtNum(v) });
  if (typeof v === 'object') return el('td', { text: JSON.stringify(v) });
  return el('td', { text: String(v) });
}

// A table of objects with the given columns ([key, heading] pairs; a
// function key computes the cell's value).
function table(rows, cols, rowClass) {
  return el('table', { class: 'grid compact' },
    el('thead', null, el('tr', null, cols.map(([, h]) => el('th', { text: h })))),
    el('tbody', null, rows.map((r) => el('tr', { class: rowClass ? rowClass(r) : null },
      cols.map(([k]) => cell(typeof k === 'function' ? k(r) : r[k]))))));
}

// The scalar fields of an object as a definition list.
function summary(state, skip) {
  const items = Object.entries(state).filter(([k, v]) => !skip.includes(k) && (v === null || typeof v !== 'object'));
  return el('dl', { class: 'kv' }, items.map(([k, v]) => [el('dt', { text: k }), el('dd', { text: typeof v === 'number' ? fmtNum(v) : String(v) })]));
}

function rungColumns(rungs) {
  const keys = [];
  for (const r of rungs) for (const k of Object.keys(r)) if (!keys.includes(k) && (r[k] === null || typeof r[k] !== 'object')) keys.push(k);
  return keys.map((k) => [k, k]);
}

function winnerText(w) {
  if (typeof w !== 'object') return String(w);
  const parts = [];
  if (w.config_id !== undefined) parts.push('config ' + w.config_id);
  if (w.config) parts.push(fmtConfig(w.config));
  if (w.loss !== undefined) parts.push('loss ' + fmtNum(w.loss));
  if (w.budget !== undefined) parts.push('at budget ' + fmtNum(w.budget));
  return parts.length ? parts.join(', ') : JSON.stringify(w);
}

function brackets(state) {
  const list = state.brackets || [];
  const out = [summary(state, ['brackets', 'plan', 'next'])];
  if (state.next) out.push(el('p', { class: 'muted', text: 'Next bracket: s=' + state.next.bracket + ', n=' + JSON.stringify(state.next.n) + ', budgets=' + JSON.stringify(state.next.budget) }));
  if (!list.length) out.push(el('p', { class: 'muted', text: 'No bracket has started yet.' }));
  // Newest first, at most 50: an infinite-horizon run can have many.
  for (const b of list.slice(-50).reverse()) {
    const rungs = b.rungs || [];
    const head = ['Bracket s=' + b.bracket];
    if (b.iteration !== undefined) head.push('iteration ' + b.iteration);
    if (b.state) head.push(b.state);
    if (b.active_rung !== undefined) head.push('active rung ' + b.active_rung);
    const w = b.winner;
    out.push(el('div', { class: 'bracket', dataset: { bracket: b.bracket } },
      el('h4', { text: head.join(' · ') }),
      rungs.length ? table(rungs, rungColumns(rungs), (r) => (b.active_rung === r.rung ? 'active' : null)) : null,
      w ? el('p', { class: 'muted', text: 'Winner: ' + winnerText(w) }) : null));
  }
  if (list.length > 50) out.push(el('p', { class: 'muted', text: (list.length - 50) + ' older brackets not shown.' }));
  if (state.plan) {
    out.push(el('details', null, el('summary', { text: 'Plan (' + state.plan.length + ' brackets per iteration)' }),
      table(state.plan, [['bracket', 'bracket'], [(p) => JSON.stringify(p.n), 'n per rung'], [(p) => JSON.stringify(p.budget), 'budget per rung']])));
  }
  return out;
}

// rising_bandits: each arm's [lower, upper] bound drawn on one common axis.
function arms(state) {
  const list = state.arms || [];
  const finite = list.flatMap((a) => [a.lower, a.upper]).filter((v) => typeof v === 'number' && Number.isFinite(v));
  const lo = finite.length ? Math.min(...finite) : 0, hi = finite.length ? Math.max(...finite) : 1;
  const span = hi > lo ? hi - lo : 1;
  const bar = (a) => {
    const box = el('div', { class: 'bound' });
    if (Number.isFinite(a.lower) && Number.isFinite(a.upper)) {
      const b = el('div', { class: 'bound-bar' + (a.eliminated_round != null ? ' eliminated' : '') });
      b.style.left = ((a.lower - lo) / span) * 100 + '%';
      b.style.width = Math.max(1, ((a.upper - a.lower) / span) * 100) + '%';
      box.append(b);
    }
    return box;
  };
  const rows = list.map((a) => el('tr', { class: a.eliminated_round != null ? 'eliminated' : 'alive' },
    cell(typeof a.arm === 'object' ? JSON.stringify(a.arm) : a.arm), cell(a.pulls), cell(a.running), cell(a.best_reward),
    cell(a.growth_rate), cell(a.lower), cell(a.upper), el('td', null, bar(a)),
    cell(a.eliminated_round == null ? 'alive' : 'round ' + a.eliminated_round + (a.eliminated_by != null ? ' by ' + JSON.stringify(a.eliminated_by) : ''))));
  return [summary(state, ['arms', 'incumbent']),
    el('table', { class: 'grid compact arms' },
      el('thead', null, el('tr', null, ['arm', 'pulls', 'running', 'best reward', 'growth', 'lower', 'upper', 'bounds', 'status'].map((h) => el('th', { text: h })))),
      el('tbody', null, rows)),
    state.incumbent ? el('p', { text: 'Incumbent: trial ' + state.incumbent.trial_id + ', value ' + fmtNum(state.incumbent.value) + ' (' + fmtConfig(state.incumbent.config) + ')' }) : null];
}

function testers(state) {
  const list = (state.testers || []).slice().sort((a, b) => (b.lcb || 0) - (a.lcb || 0));
  const shown = list.slice(0, 100);
  return [summary(state, ['testers', 'samples', 'incumbent']),
    state.incumbent ? el('p', { text: 'Incumbent: tester of config ' + state.incumbent.config_id + ', mean capped runtime ' + fmtNum(state.incumbent.value) + ' at cap ' + fmtNum(state.incumbent.budget) }) : null,
    el('p', { class: 'muted', text: 'Testers by lower confidence bound (largest first)' + (list.length > shown.length ? ', ' + shown.length + ' of ' + list.length : '') + '.' }),
    table(shown, [['tester', 'tester'], [(t) => fmtConfig(t.config), 'config'], ['cap', 'cap'], ['lcb', 'LCB'],
      ['mean_capped_runtime', 'mean capped runtime'], ['active_instances', 'instances'], ['solved', 'solved'],
      ['runs', 'runs'], ['in_flight', 'in flight'], ['queue_length', 'queue']], null),
    state.samples && state.samples.length ? el('details', null, el('summary', { text: 'Samples (' + state.samples.length + ')' }), table(state.samples, rungColumns(state.samples))) : null];
}

function verdicts(state) {
  const v = state.verdicts || [];
  return [summary(state, ['verdicts', 'model', 'intermediate_epochs', 'bos']),
    state.bos ? el('p', { text: 'Bayesian optimal stopping: triggered ' + state.bos.triggered + ', stopped ' + state.bos.stopped + ', epochs saved ' + fmtNum(state.bos.epochs_saved) }) : null,
    v.length ? table(v, [['trial_id', 'trial'], ['epoch', 'epoch'], ['action', 'action'], ['verdict', 'verdict'], ['p_worse', 'P(worse)'], ['incumbent_error', 'incumbent error'], ['note', 'note']], (r) => (r.action === 'stop' ? 'stopped' : null))
      : el('p', { class: 'muted', text: 'No stop verdict on a running trial.' }),
    state.model ? el('details', null, el('summary', { text: 'Model' }), jsonTree(state.model, 1)) : null];
}

// The panel's content for scheduler (the study's `scheduler` object).
export function schedulerView(scheduler) {
  const state = scheduler && scheduler.state;
  const box = el('div', { class: 'sched', dataset: { scheduler: scheduler ? scheduler.name : '' } });
  if (!state || typeof state !== 'object') {
    box.append(el('p', { class: 'muted', text: 'The scheduler reports no state.' }));
    return box;
  }
  let body;
  if (Array.isArray(state.brackets)) body = brackets(state);
  else if (Array.isArray(state.arms)) body = arms(state);
  else if (Array.isArray(state.testers)) body = testers(state);
  else if (Array.isArray(state.verdicts)) body = verdicts(state);
  else body = [summary(state, []), jsonTree(state, 0)];
  box.append(...body.flat().filter(Boolean));
  box.append(el('details', { class: 'raw' }, el('summary', { text: 'Raw state (JSON)' }), jsonTree(state, 1)));
  return box;
}
