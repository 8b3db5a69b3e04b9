// explain.js: the "explain" view of a study (#/study/12/explain): a
// parallel-coordinates plot of its completed trials and the importance of
// each parameter (importance.js: OOB permutation importance over a seeded
// random forest). Both use one row per configuration at its largest
// completed budget (importance.js finalTrials), so a multi-fidelity study is
// judged by each configuration's last word.
//
// Bounded: it reads at most MAX_TRIALS completed trials, fewer for a large
// space (MAX_VALUES parameter values in all; pages of 1,000, no
// measurements, in id order: the first ones of a larger study, and says so);
// the forest sees at most 500 of those (a seeded subsample) and the first
// MAX_FEATURES parameters (its cost grows with their number). Drawn once on
// open and on "Reload", not on a timer: a refit every 3 s would move the bars
// under the reader's eyes.
import { getJson, ApiError } from './api.js';
import { el, clear, fmtNum } from './dom.js';
import { ramp } from './charts.js';
import { finalTrials, studyImportance } from './importance.js';
import { drawParallel, MAX_AXES } from './parallel.js';

const MAX_TRIALS = 2000;
const MAX_VALUES = 200000;
const MAX_FEATURES = 48;
const PAGE = 1000;
const SEED = 1; // the forest's seed: the same trials always give the same bars

async function completedTrials(id, nParams, signal) {
  // At least one trial, never more values than MAX_VALUES (a very wide space reads few trials).
  const max = Math.max(1, Math.min(MAX_TRIALS, Math.floor(MAX_VALUES / Math.max(1, nParams))));
  const out = [];
  let after = 0;
  while (out.length < max) {
    const r = await getJson('/v1/studies/' + id + '/trials', { state: 'completed', limit: Math.min(PAGE, max - out.length), after }, signal);
    out.push(...(r.trials || []));
    if (r.next_after === null || r.next_after === undefined) return { trials: out, all: true };
    after = r.next_after;
  }
  return { trials: out.slice(0, max), all: false };
}

function bars(result, study) {
  const box = el('div', { id: 'importance', class: 'imp' });
  const res = study.resource && study.resource.name ? study.resource.name : 'budget';
  for (const f of result.features) {
    const bar = el('span', { class: 'imp-bar' + (f.name === 'budget' && result.budgetFeature ? ' imp-budget' : '') });
    bar.style.width = (100 * f.share).toFixed(1) + '%';
    const label = f.name === 'budget' && result.budgetFeature ? res + ' (budget, not a parameter)' : f.name;
    box.append(el('div', { class: 'imp-row', dataset: { param: f.name, importance: String(f.importance), share: String(f.share) }, title: 'rise of the OOB squared error on ranks: ' + fmtNum(f.importance) + ' ± ' + fmtNum(f.se) },
      el('span', { class: 'imp-name', text: label }),
      el('span', { class: 'imp-track' }, bar),
      el('span', { class: 'imp-num', text: (100 * f.share).toFixed(1) + '%' + (f.se > 0 ? ' ± ' + (100 * f.se / (result.positive || 1)).toFixed(1) : '') })));
  }
  return box;
}

export function explainView(root, id) {
  const ctl = new AbortController();
  const signal = ctl.signal;
  let study = null;
  let rows = [];
  let order = 'space';
  let imp = null;
  let onResize = null;

  delete root.dataset.loaded;
  clear(root).append(el('p', { class: 'muted', text: 'Loading study ' + id + '…' }));
  window.bdDash = window.bdDash || { charts: {} };

  function params() {
    const ps = (study.parameters || []).slice();
    if (order !== 'importance' || !imp) return ps;
    const rank = new Map(imp.features.map((f, i) => [f.name, i]));
    return ps.sort((a, b) => (rank.has(a.name) ? rank.get(a.name) : 1e9) - (rank.has(b.name) ? rank.get(b.name) : 1e9));
  }

  async function load() {
    try {
      study = await getJson('/v1/studies/' + id, null, signal);
      const got = await completedTrials(id, (study.parameters || []).length, signal);
      rows = finalTrials(got.trials);
      const fitted = Object.assign({}, study, { parameters: (study.parameters || []).slice(0, MAX_FEATURES) });
      imp = rows.length ? studyImportance(fitted, rows, { seed: SEED }) : null;
      if (imp) {
        imp.budgetFeature = new Set(rows.map((t) => t.budget)).size > 1;
        imp.positive = imp.features.reduce((s, f) => s + Math.max(0, f.importance), 0);
      }
      window.bdDash.importance = imp;
      draw(got);
      root.dataset.loaded = 'explain-' + id; // for tests: drawn
    } catch (e) {
      if (e.name === 'AbortError') return;
      const msg = e instanceof ApiError && e.status === 404 ? 'No study ' + id + ' (or it is not yours).' : 'Cannot load the study: ' + e.message;
      clear(root).append(el('p', { class: 'error', text: msg }), el('a', { href: '#/studies', text: '← Studies' }));
    }
  }

  function draw(got) {
    const nParams = (study.parameters || []).length;
    const multi = new Set(rows.map((t) => t.budget)).size > 1;
    const orderSel = el('select', { id: 'axis-order', 'aria-label': 'axis order' },
      el('option', { value: 'space', text: 'axes in the space\'s order' }), el('option', { value: 'importance', text: 'axes by importance' }));
    orderSel.value = order;
    const reload = el('button', { type: 'button', id: 'explain-reload', text: 'Reload' });
    const pcBox = el('div', { class: 'pc-box' });
    const seen = got.all ? 'all ' + got.trials.length + ' completed trials' : 'the first ' + got.trials.length + ' completed trials (of more)';
    const how = multi
      ? rows.length + ' configurations in ' + seen + ': each configuration once, at its largest completed budget (a multi-fidelity scheduler ran it at several; the ' +
        ((study.resource && study.resource.name) || 'budget') + ' axis shows which). '
      : rows.length + ' trials: ' + seen + '. ';
    const key = el('div', { class: 'colour-key' });
    const rampBar = el('span', { class: 'ramp' });
    rampBar.style.background = 'linear-gradient(to right, ' + [0, 0.225, 0.45, 0.675, 0.9].map(ramp).join(', ') + ')';
    const bestSw = el('span', { class: 'swatch' });
    bestSw.style.background = '#d62728';
    key.append(el('span', { text: 'better ' }), rampBar, el('span', { text: ' worse' }), el('span', { class: 'key-item' }, bestSw, 'best'));
    const pcNote = el('p', { class: 'chart-note muted', id: 'parallel-note' });
    const impNote = el('p', { class: 'chart-note muted', id: 'importance-note' });
    clear(root).append(
      el('p', null, el('a', { href: '#/study/' + id, text: '← Study' }), ' ', el('a', { href: '#/studies', text: 'Studies' })),
      el('h1', { text: study.name }),
      el('div', { class: 'toolbar' }, orderSel, reload),
      el('section', { class: 'panel', id: 'parallel-panel' }, el('h3', { text: 'Parallel coordinates' }), pcNote, key, pcBox),
      el('section', { class: 'panel wide', id: 'importance-panel' }, el('h3', { text: 'Parameter importance' }), impNote,
        imp ? bars(imp, study) : el('p', { class: 'muted empty', text: 'No completed trial yet.' })));
    const drawPc = () => {
      const r = drawParallel(pcBox, study, params(), rows);
      window.bdDash.parallel = r;
      pcNote.textContent = how + 'One line per ' + (multi ? 'configuration' : 'trial') + ' (' + r.lines + ' drawn), coloured by ' +
        ((study.objective && study.objective.metric) || 'value') + '; the best (trial ' + (r.best === null ? '—' : r.best) + ') in red.' +
        (nParams > MAX_AXES ? ' The first ' + MAX_AXES + ' of ' + nParams + ' parameters are shown.' : '');
    };
    drawPc();
    if (imp) {
      impNote.textContent = 'Permutation importance over a random forest (' + imp.trees + ' trees, seed ' + SEED + ') fitted to the ranks of the values of ' + imp.n +
        (multi ? ' configurations, the budget a feature of its own' : ' trials') + ': how much worse the forest predicts trials it did not see when a parameter\'s values are shuffled. ' +
        'Out-of-bag R² ' + (Number.isFinite(imp.r2) ? imp.r2.toFixed(2) : '—') +
        (Number.isFinite(imp.r2) && imp.r2 < 0.1 ? ': the model explains little, so read the bars as noise.' : '.') +
        (nParams > MAX_FEATURES ? ' Only the first ' + MAX_FEATURES + ' of ' + nParams + ' parameters are in the model.' : '');
    }
    orderSel.addEventListener('change', () => {
      order = orderSel.value;
      drawPc();
    });
    reload.addEventListener('click', () => {
      reload.disabled = true;
      delete root.dataset.loaded;
      load();
    });
    if (onResize) window.removeEventListener('resize', onResize);
    onResize = drawPc;
    window.addEventListener('resize', onResize);
  }

  load();
  return () => {
    ctl.abort();
    if (onResize) window.removeEventListener('resize', onResize);
  };
}
