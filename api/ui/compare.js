// compare.js: two or more studies side by side (#/compare/3,7,9, picked by
// the checkboxes of the studies list): each study's best value so far
// against the resource it had spent (the history route's `resource`:
// budgets handed out, a promotion counting its increment), or against
// seconds since it started, on one chart. A study's line is a step function
// that ends at its total (`resource_total`, or its last activity), so a
// study that spent more without improving shows it.
//
// Bounded: at most MAX_STUDIES studies, each one GET of the study and one of
// its history (at most HISTORY_POINTS points), refreshed every POLL_MS.
import { getJson, ApiError } from './api.js';
import { el, clear, fmtNum } from './dom.js';
import { Chart, steppedPaths } from './charts.js';

export const MAX_STUDIES = 8;
const HISTORY_POINTS = 500;
const POLL_MS = 5000;
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

// The series of one study: [xs, ys] of its best value so far, ending at its total.
function stepsOf(s, axis) {
  const pts = (s.history && s.history.best) || [];
  const xs = pts.map((p) => (axis === 'resource' ? p.resource : p.elapsed_seconds));
  const ys = pts.map((p) => p.value);
  const end = axis === 'resource' ? s.history.resource_total
    : s.study.last_activity_at && s.study.created_at ? s.study.last_activity_at - s.study.created_at : null;
  if (ys.length && typeof end === 'number' && end > xs[xs.length - 1]) {
    xs.push(end);
    ys.push(ys[ys.length - 1]);
  }
  return [xs, ys];
}

// uPlot wants one x array: the union of every study's xs, each series null
// where it has no point (spanGaps joins its steps across them).
export function align(seriesXY) {
  const xs = [...new Set(seriesXY.flatMap(([x]) => x))].sort((a, b) => a - b);
  const idx = new Map(xs.map((x, i) => [x, i]));
  const data = [xs];
  for (const [sx, sy] of seriesXY) {
    const ys = new Array(xs.length).fill(null);
    sx.forEach((x, i) => {
      ys[idx.get(x)] = sy[i];
    });
    data.push(ys);
  }
  return data;
}

export function compareView(root, ids) {
  const ctl = new AbortController();
  const signal = ctl.signal;
  let timer = null;
  let chart = null;
  let axis = null; // 'resource' | 'time'; chosen on the first load
  let busy = false;
  const loaded = [];

  delete root.dataset.loaded;
  ids = [...new Set(ids)].slice(0, MAX_STUDIES);
  const axisSel = el('select', { id: 'compare-axis', 'aria-label': 'x axis' },
    el('option', { value: 'resource', text: 'against resource spent' }), el('option', { value: 'time', text: 'against time since each study started' }));
  const status = el('span', { class: 'muted', id: 'compare-status' });
  const legend = el('div', { class: 'colour-key', id: 'compare-legend' });
  const warn = el('p', { class: 'muted', id: 'compare-warn' });
  const charts = el('div');
  const table = el('tbody');
  clear(root).append(
    el('p', null, el('a', { href: '#/studies', text: '← Studies' }), ' ', status),
    el('h1', { text: 'Compare ' + ids.length + ' studies' }),
    el('div', { class: 'toolbar' }, axisSel),
    warn, legend, charts,
    el('section', { class: 'panel wide' }, el('h3', { text: 'Studies' }),
      el('table', { class: 'grid compact', id: 'compare-table' },
        el('thead', null, el('tr', null, ['', 'ID', 'Name', 'Scheduler', 'Objective', 'Completed', 'Best', 'Resource spent', 'Seconds'].map((h) => el('th', { text: h })))),
        table)));
  chart = new Chart(charts, 'compare', 'Best value so far', { xLabel: '', yLabel: 'best' });
  axisSel.addEventListener('change', () => {
    axis = axisSel.value;
    draw();
  });

  function draw() {
    const ok = loaded.filter((s) => s.study);
    const metric = ok.length ? (ok[0].study.objective && ok[0].study.objective.metric) || 'value' : 'value';
    const resNames = [...new Set(ok.map((s) => (s.study.resource && s.study.resource.name) || 'resource'))];
    chart.opts.xLabel = axis === 'resource' ? resNames.join(' / ') + ' spent (all trials, cumulative)' : 'seconds since the study started';
    chart.opts.yLabel = 'best ' + metric;
    const xy = ok.map((s) => stepsOf(s, axis));
    const series = ok.map((s, i) => ({
      label: s.study.name, stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: true, paths: steppedPaths(), points: { show: true, size: 4 },
    }));
    chart.set(align(xy), series, axis + '|' + ok.map((s) => s.id).join(','));
    chart.note.textContent = 'One line per study: its best value so far, a step at each improvement, to its total ' + (axis === 'resource' ? 'resource spent.' : 'time.');
    chart.box.dataset.series = String(series.length);
    clear(legend).append(...ok.map((s, i) => {
      const sw = el('span', { class: 'swatch' });
      sw.style.background = COLOURS[i % COLOURS.length];
      return el('span', { class: 'key-item', dataset: { study: s.id } }, sw, s.study.name);
    }));
    const goals = new Set(ok.map((s) => (s.study.objective ? s.study.objective.goal + ' ' + (s.study.objective.metric || 'value') : '')));
    const notes = [];
    if (goals.size > 1) notes.push('These studies have different objectives (' + [...goals].join('; ') + '): their values may not be comparable.');
    if (axis === 'resource' && resNames.length > 1) notes.push('Their resources have different names (' + resNames.join(', ') + ').');
    if (axis === 'resource' && ok.some((s) => !s.history.resource_total)) notes.push('A study without resource spent has no line against resource; compare against time.');
    for (const s of loaded.filter((x) => !x.study)) notes.push('Study ' + s.id + ': ' + s.error);
    warn.textContent = notes.join(' ');
    clear(table).append(...loaded.map((s) => {
      if (!s.study) return el('tr', null, el('td'), el('td', { class: 'num', text: s.id }), el('td', { colspan: 7, class: 'error', text: s.error }));
      const sw = el('span', { class: 'swatch' });
      sw.style.background = COLOURS[ok.indexOf(s) % COLOURS.length];
      const st = s.study, inc = st.incumbent;
      return el('tr', { dataset: { study: st.id } },
        el('td', null, sw), el('td', { class: 'num', text: st.id }),
        el('td', null, el('a', { href: '#/study/' + st.id, text: st.name })),
        el('td', { text: st.scheduler ? st.scheduler.name : '' }),
        el('td', { text: st.objective ? st.objective.goal + ' ' + (st.objective.metric || 'value') : '' }),
        el('td', { class: 'num', text: String(s.history.completed) }),
        el('td', { class: 'num', text: inc ? fmtNum(inc.value) : '—' }),
        el('td', { class: 'num', text: fmtNum(s.history.resource_total) }),
        el('td', { class: 'num', text: st.used ? fmtNum(st.used.seconds) : '—' }));
    }));
  }

  async function load() {
    if (busy) return;
    busy = true;
    try {
      const got = await Promise.all(ids.map(async (id) => {
        try {
          const [study, history] = await Promise.all([getJson('/v1/studies/' + id, null, signal),
            getJson('/v1/studies/' + id + '/history', { points: HISTORY_POINTS }, signal)]);
          return { id, study, history };
        } catch (e) {
          if (e.name === 'AbortError') throw e;
          return { id, study: null, error: e instanceof ApiError && e.status === 404 ? 'no such study (or it is not yours)' : e.message };
        }
      }));
      loaded.splice(0, loaded.length, ...got);
      if (axis === null) {
        // Resource when every study spent some, else time (e.g. a study without a resource).
        const ok = got.filter((s) => s.study);
        axis = ok.length && ok.every((s) => s.history.resource_total > 0) ? 'resource' : 'time';
        axisSel.value = axis;
      }
      draw();
      status.textContent = 'refreshed ' + new Date().toLocaleTimeString() + ' · live every ' + POLL_MS / 1000 + ' s';
      root.dataset.loaded = 'compare'; // for tests: drawn
    } catch (e) {
      if (e.name !== 'AbortError') status.textContent = 'Cannot load: ' + e.message;
    } finally {
      busy = false;
    }
  }

  load().then(() => {
    if (!signal.aborted) timer = setInterval(() => {
      if (!document.hidden) load();
    }, POLL_MS);
  });
  return () => {
    clearInterval(timer);
    ctl.abort();
    if (chart) chart.destroy();
  };
}
