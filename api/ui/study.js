// study.js: one study: summary, best value against time and resource (the
// history route), learning curves, a parameter scatter, the scheduler's own
// view and the trial table, refreshed every POLL_MS while workers run. A
// study with several objectives shows its hypervolume over time instead of
// the best value, and the Pareto plot (pareto.js).
//
// The browser never loads all trials. It holds at most BEST_N trials (the
// best completed, order=best) plus the LATEST_N most recent ones, each with
// its measurements; a refresh asks for the study's aggregates, the trials
// after the oldest still-running one of the latest window, and, when more
// trials completed, the best BEST_N and the history again (both bounded).
import { getJson, ApiError } from './api.js';
import { el, clear, fmtNum, fmtAgo, fmtTime, fmtConfig, attrList } from './dom.js';
import { Chart, colourBy, colourKey, steppedPaths, noPaths } from './charts.js';
import { schedulerView } from './sched_view.js';
import { TrialsTable } from './trials_table.js';
import { ParetoView } from './pareto.js';

const POLL_MS = 3000;
const BEST_N = 200;
const LATEST_N = 100;
const HISTORY_POINTS = 500;
const BEST_REFRESH_MS = 10000;

export function studyView(root, id) {
  const ctl = new AbortController();
  const signal = ctl.signal;
  const base = '/v1/studies/' + id;
  const best = new Map(); // trial id -> trial with measurements
  const latest = new Map();
  let study = null;
  let lastId = 0; // the largest trial id of this study seen so far
  let latestFrom = 0; // the trials cursor of the next refresh of `latest`
  let bestAt = 0;
  let bestCompleted = -1;
  let schedJson = '';
  let timer = null;
  let busy = false;
  let ui = null;

  delete root.dataset.loaded;
  clear(root).append(el('p', { class: 'muted', text: 'Loading study ' + id + '…' }));

  const trialsQ = (q) => getJson(base + '/trials', q, signal);

  // Whether the study has a trial with id > x (a one-row probe).
  async function hasAfter(x) {
    const r = await trialsQ({ after: x, limit: 1 });
    return (r.trials || []).length > 0;
  }

  // The study's largest trial id, from a known one (hint) by galloping then
  // bisecting with one-row probes: O(log n) tiny requests, however many trials.
  async function findLastId(hint) {
    let lo = hint, hi, step = 256;
    for (;;) {
      const x = lo + step;
      if (await hasAfter(x)) {
        lo = x + 1;
        step *= 2;
      } else {
        hi = x;
        break;
      }
    }
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (await hasAfter(mid)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function build() {
    const params = study.parameters || [];
    const pick = (idName) => el('select', { id: idName }, params.map((p) => el('option', { value: p.name, text: p.name })));
    ui = {
      title: el('h1', null),
      facts: el('dl', { class: 'kv facts' }),
      note: el('p', { class: 'muted', id: 'curves-note' }),
      colourSel: pick('colour-param'),
      scatterSel: pick('scatter-param'),
      charts: el('div', { class: 'charts' }),
      sched: el('div', { id: 'scheduler' }),
      refreshed: el('span', { class: 'muted', id: 'refreshed' }),
    };
    ui.colourSel.addEventListener('change', drawCurves);
    ui.scatterSel.addEventListener('change', drawScatter);
    const resName = study.resource ? study.resource.name || 'resource' : 'resource';
    const metric = (study.objective && study.objective.metric) || (multi() ? study.objectives[0].metric : 'value');
    const bestTitle = multi() ? 'Hypervolume' : 'Best ' + metric;
    clear(root).append(
      el('p', null, el('a', { href: '#/studies', text: '← Studies' }), ' ',
        el('a', { id: 'explain-link', href: '#/study/' + study.id + '/explain', text: 'Explain: parallel coordinates, parameter importance →' }), ' ', ui.refreshed),
      ui.title, ui.facts,
      el('div', { class: 'toolbar' }, el('label', { for: 'colour-param', text: 'Colour curves by ' }), ui.colourSel,
        el('label', { for: 'scatter-param', text: ' Scatter x ' }), ui.scatterSel),
      ui.note, ui.charts);
    if (multi()) ui.pareto = new ParetoView(ui.charts, study);
    const yBest = multi() ? 'hypervolume' : metric;
    ui.bestTime = new Chart(ui.charts, 'best_time', bestTitle + ' vs time', { xLabel: 'seconds since the study started', yLabel: yBest });
    ui.bestRes = new Chart(ui.charts, 'best_resource', bestTitle + ' vs ' + resName + ' spent', { xLabel: resName + ' spent (all trials)', yLabel: yBest });
    ui.curves = new Chart(ui.charts, 'curves', 'Learning curves (' + metric + ' per step)', { xLabel: 'step', yLabel: metric });
    ui.curves.note.textContent = 'Dashed: stopped by the scheduler. Thick with dots: a promotion (resumed from an earlier trial).';
    ui.key = el('div');
    ui.curves.box.before(ui.key);
    ui.scatter = new Chart(ui.charts, 'scatter', 'Parameter vs ' + metric + ' (completed trials shown)', { xLabel: 'parameter', yLabel: metric });
    root.append(el('section', { class: 'panel wide' }, el('h3', { text: 'Scheduler: ' + (study.scheduler ? study.scheduler.name : '?') }), ui.sched));
    ui.table = new TrialsTable(root, study, signal);
  }

  // Several objectives: GET /v1/studies/{id} has "objectives" (2..8) in place of "objective".
  function multi() {
    return Array.isArray(study.objectives) && study.objectives.length > 1;
  }

  function drawFacts() {
    const t = study.trials || {};
    const inc = study.incumbent;
    ui.title.textContent = study.name;
    const goal = (o) => o.goal + ' ' + (o.metric || 'value');
    const cons = (study.constraints || []).map((c) => (c.min !== undefined && c.min !== null ? fmtNum(c.min) + ' ≤ ' : '') + c.metric +
      (c.max !== undefined && c.max !== null ? ' ≤ ' + fmtNum(c.max) : ''));
    const front = study.pareto_front || [];
    const facts = [
      ['ID', study.id], ['Scheduler', study.scheduler ? study.scheduler.name : ''], ['State', study.state],
      [multi() ? 'Objectives' : 'Objective', multi() ? study.objectives.map(goal).join(' · ') : (study.objective ? goal(study.objective) : '')],
      ['Trials', (t.total || 0) + ' total · ' + ['running', 'completed', 'stopped', 'failed', 'expired'].map((s) => (t[s] || 0) + ' ' + s).join(' · ')],
      multi() ? ['Pareto front', front.length + ' trials' + (typeof study.hypervolume === 'number' ? ' · hypervolume ' + fmtNum(study.hypervolume) : '')]
        : ['Best value', inc ? fmtNum(inc.value) + ' (trial ' + inc.trial_id + ', budget ' + fmtNum(inc.budget) + ')' : '—'],
      multi() ? null : ['Best config', inc ? fmtConfig(inc.config) : '—'],
      cons.length ? ['Constraints', cons.join(' · ') + (multi() ? '' : ' (the best value is the best feasible trial\'s)')] : null,
      ['Used', study.used ? 'trials ' + study.used.trials + ', resource ' + fmtNum(study.used.resource) + ', seconds ' + fmtNum(study.used.seconds) : '—'],
      ['Last activity', study.last_activity_at ? fmtAgo(study.last_activity_at) + ' (' + fmtTime(study.last_activity_at) + ')' : '—'],
    ];
    // Fields of newer daemons, shown only when present: `paused` and the
    // user's `metadata` (hostile text: keys and values go in as text).
    if (typeof study.paused === 'boolean') facts.splice(3, 0, ['Paused', study.paused ? 'yes: suggest hands out no trials until resumed' : 'no']);
    clear(ui.facts).append(...facts.filter(Boolean).flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v, dataset: { fact: k.toLowerCase().replace(/ /g, '_') } })]));
    const meta = study.metadata && typeof study.metadata === 'object' && !Array.isArray(study.metadata) ? Object.entries(study.metadata) : [];
    if (meta.length) ui.facts.append(el('dt', { text: 'Metadata' }), el('dd', { dataset: { fact: 'metadata' } }, attrList(meta, 'metadata')));
    const js = JSON.stringify(study.scheduler || null);
    if (js !== schedJson) {
      schedJson = js;
      clear(ui.sched).append(schedulerView(study.scheduler));
    }
  }

  function drawHistory(h) {
    const pts = (h && h.best) || [];
    // Several objectives: each point carries the front's hypervolume after it.
    const y = multi() ? (p) => (typeof p.hypervolume === 'number' ? p.hypervolume : null) : (p) => p.value;
    ui.bestTime.set([pts.map((p) => p.elapsed_seconds), pts.map(y)], [{ label: 'best', stroke: '#1f77b4', width: 2, paths: steppedPaths(), points: { show: true, size: 4 } }], 'b');
    ui.bestRes.set([pts.map((p) => p.resource), pts.map(y)], [{ label: 'best', stroke: '#d62728', width: 2, paths: steppedPaths(), points: { show: true, size: 4 } }], 'b');
    const n = h ? h.completed : 0;
    ui.bestTime.note.textContent = pts.length + (multi() ? ' changes of the front' : ' improvements of the best') + ' over ' + fmtNum(n) + ' completed trials.';
    ui.bestRes.note.textContent = h && h.resource_total !== undefined ? 'Resource spent by all trials: ' + fmtNum(h.resource_total) + '.' : '';
  }

  function shown() {
    const all = new Map(best);
    for (const [k, v] of latest) all.set(k, v);
    return [...all.values()].sort((a, b) => a.id - b.id);
  }

  function drawCurves() {
    const trials = shown().filter((t) => (t.measurements || []).length);
    const param = (study.parameters || []).find((p) => p.name === ui.colourSel.value);
    const colour = colourBy(param);
    const steps = [...new Set(trials.flatMap((t) => t.measurements.map((m) => m.step)))].sort((a, b) => a - b);
    const idx = new Map(steps.map((s, i) => [s, i]));
    const data = [steps];
    const series = [];
    for (const t of trials) {
      const ys = new Array(steps.length).fill(null);
      for (const m of t.measurements) ys[idx.get(m.step)] = m.value;
      data.push(ys);
      const promoted = t.resume_from !== null && t.resume_from !== undefined;
      series.push({
        label: 'trial ' + t.id,
        stroke: colour(t.config),
        width: promoted ? 2 : 1,
        dash: t.state === 'stopped' ? [6, 4] : undefined,
        spanGaps: true,
        points: { show: promoted, size: 4 },
      });
    }
    if (ui.key.dataset.param !== ui.colourSel.value) {
      ui.key.dataset.param = ui.colourSel.value;
      clear(ui.key).append(colourKey(param));
    }
    const key = ui.colourSel.value + '|' + trials.map((t) => t.id + t.state[0]).join(',');
    ui.curves.set(data, series, key);
    const total = study.trials ? study.trials.total : 0;
    ui.note.textContent = (multi() ? 'Curves, scatter and the Pareto plot\'s other points show' : 'Curves and scatter show the best ' + best.size + ' completed trials (order=best, up to ' + BEST_N + ') and') +
      ' the latest ' + latest.size + ' trials (up to ' + LATEST_N + ') of ' + total + '; the table pages through all of them.';
    ui.curves.note.dataset.curves = String(trials.length);
  }

  function drawScatter() {
    const param = (study.parameters || []).find((p) => p.name === ui.scatterSel.value);
    const done = shown().filter((t) => t.state === 'completed' && typeof t.value === 'number' && t.config);
    let pts = [];
    let xValues;
    let scales;
    if (param && param.type === 'categorical') {
      const keys = (param.choices || []).map((c) => JSON.stringify(c));
      pts = done.map((t) => [keys.indexOf(JSON.stringify(t.config[param.name])), t.value]).filter((p) => p[0] >= 0);
      xValues = (u, vals) => vals.map((v) => (Number.isInteger(v) && param.choices[v] !== undefined ? String(param.choices[v]) : ''));
      scales = { x: { time: false, range: [-0.5, keys.length - 0.5] } };
    } else if (param) {
      pts = done.filter((t) => typeof t.config[param.name] === 'number').map((t) => [t.config[param.name], t.value]);
      if (param.log && param.low > 0) scales = { x: { time: false, distr: 3 } };
    }
    pts.sort((a, b) => a[0] - b[0]);
    ui.scatter.opts.xLabel = param ? param.name : 'parameter';
    ui.scatter.opts.xValues = xValues;
    ui.scatter.set([pts.map((p) => p[0]), pts.map((p) => p[1])],
      [{ label: 'value', stroke: '#2ca02c', fill: '#2ca02c', paths: noPaths, points: { show: true, size: 6, fill: '#2ca02c' } }],
      'scatter|' + (param ? param.name : ''), scales);
    ui.scatter.note.textContent = pts.length + ' completed trials.';
  }

  async function loadBest() {
    // Several objectives have no single best (order=best is refused): the front comes with the study.
    const r = multi() ? { trials: [] } : await trialsQ({ order: 'best', limit: BEST_N, include: 'measurements' });
    best.clear();
    for (const t of r.trials || []) {
      best.set(t.id, t);
      lastId = Math.max(lastId, t.id);
    }
    let h = null;
    try {
      h = await getJson(base + '/history', { points: HISTORY_POINTS }, signal);
      for (const p of h.best || []) lastId = Math.max(lastId, p.trial_id || 0);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
    }
    drawHistory(h);
    bestAt = Date.now();
    bestCompleted = study.trials ? study.trials.completed : 0;
  }

  // The cursor after which exactly the study's last LATEST_N trials follow
  // (0 when it has fewer): ids are global, so other studies' trials may sit
  // between this study's. Gallops down from the last id, then bisects, with
  // id-only pages (no measurements): O(log n) requests of at most LATEST_N rows.
  async function latestCursor() {
    const full = async (x) => ((await trialsQ({ after: x, limit: LATEST_N })).trials || []).length >= LATEST_N;
    let hi = lastId, lo = 0, step = LATEST_N;
    for (;;) {
      const x = lastId - step;
      if (x <= 0) break;
      if (await full(x)) {
        lo = x;
        break;
      }
      hi = x;
      step *= 2;
    }
    if (lo === 0 && !(await full(0))) return 0;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await full(mid)) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  // The newest trials: first the study's last LATEST_N, then on each refresh
  // the trials after the oldest one still running of those (or after the
  // newest seen); a full page moves the cursor on, so new trials are reached.
  async function loadLatest(initial) {
    if (initial) {
      lastId = await findLastId(lastId);
      latestFrom = await latestCursor();
    }
    const r = await trialsQ({ after: latestFrom, limit: LATEST_N, include: 'measurements' });
    for (const t of r.trials || []) {
      latest.set(t.id, t);
      if (best.has(t.id)) best.set(t.id, t);
      lastId = Math.max(lastId, t.id);
    }
    const ids = [...latest.keys()].sort((a, b) => b - a);
    for (const old of ids.slice(LATEST_N)) latest.delete(old);
    const running = [...latest.values()].filter((t) => t.state === 'running').map((t) => t.id);
    if (r.next_after !== null && r.next_after !== undefined) latestFrom = r.next_after;
    else latestFrom = running.length ? Math.min(...running) - 1 : lastId;
  }

  async function refresh(initial) {
    if (busy) return;
    busy = true;
    try {
      const prevTotal = study ? study.trials.total : -1;
      study = await getJson(base, null, signal);
      if (initial) build();
      drawFacts();
      const completed = study.trials ? study.trials.completed : 0;
      if (initial || (completed !== bestCompleted && Date.now() - bestAt >= BEST_REFRESH_MS)) await loadBest();
      const running = [...latest.values()].some((t) => t.state === 'running');
      if (initial || running || study.trials.total !== prevTotal) await loadLatest(initial);
      drawCurves();
      drawScatter();
      if (ui.pareto) ui.pareto.set(study, shown());
      await ui.table.load();
      ui.refreshed.textContent = 'refreshed ' + new Date().toLocaleTimeString() + (study.state === 'done' ? '' : ' · live every ' + POLL_MS / 1000 + ' s');
      root.dataset.loaded = String(id); // for tests: this study's first draw is complete
    } catch (e) {
      if (e.name === 'AbortError') return;
      const msg = e instanceof ApiError && e.status === 404 ? 'No study ' + id + ' (or it is not yours).' : 'Cannot load the study: ' + e.message;
      if (!ui) clear(root).append(el('p', { class: 'error', text: msg }), el('a', { href: '#/studies', text: '← Studies' }));
      else ui.refreshed.textContent = msg;
    } finally {
      busy = false;
    }
  }

  refresh(true).then(() => {
    if (!signal.aborted && ui) {
      timer = setInterval(() => {
        if (!document.hidden) refresh(false);
      }, POLL_MS);
    }
  });
  return () => {
    clearInterval(timer);
    ctl.abort();
    if (ui) for (const c of [ui.bestTime, ui.bestRes, ui.curves, ui.scatter, ui.pareto]) if (c) c.destroy();
  };
}
