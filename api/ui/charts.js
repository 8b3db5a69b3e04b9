// charts.js: the study page's plots, thin wrappers over uPlot (vendored in
// vendor/, loaded as the global uPlot by index.html). Each chart keeps its
// uPlot instance in window.bdDash.charts[name], so the browser tests can
// check the data a chart was given, not just that a canvas exists.
import { el, fmtNum } from './dom.js';

const uPlot = window.uPlot;
const HEIGHT = 240;
window.bdDash = window.bdDash || { charts: {} };

const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

// t in [0, 1] -> a colour of the viridis ramp.
export function ramp(t) {
  if (!Number.isFinite(t)) return '#999';
  t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(t));
  const f = t - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
  return 'rgb(' + c.join(',') + ')';
}

// A function config -> colour for the study parameter p (categorical by
// choice, numeric along the ramp, on a log scale when the parameter is).
export function colourBy(p) {
  if (!p) return () => PALETTE[0];
  if (p.type === 'categorical') {
    const keys = (p.choices || []).map((c) => JSON.stringify(c));
    return (config) => {
      const i = keys.indexOf(JSON.stringify(config ? config[p.name] : undefined));
      return i < 0 ? '#999' : PALETTE[i % PALETTE.length];
    };
  }
  const log = p.log && p.low > 0;
  const f = (v) => (log ? Math.log(v) : v);
  const lo = f(p.low), hi = f(p.high);
  return (config) => {
    const v = config ? config[p.name] : undefined;
    if (typeof v !== 'number') return '#999';
    return ramp(hi > lo ? (f(v) - lo) / (hi - lo) : 0.5);
  };
}

// A small key for colourBy(p): a swatch per choice, or the ramp from low to high.
export function colourKey(p) {
  const key = el('div', { class: 'colour-key' });
  if (!p) return key;
  if (p.type === 'categorical') {
    const colour = colourBy(p);
    for (const c of (p.choices || []).slice(0, 20)) {
      const sw = el('span', { class: 'swatch' });
      sw.style.background = colour({ [p.name]: c });
      key.append(el('span', { class: 'key-item' }, sw, String(c)));
    }
    return key;
  }
  const bar = el('span', { class: 'ramp' });
  bar.style.background = 'linear-gradient(to right, ' + [0, 0.25, 0.5, 0.75, 1].map(ramp).join(', ') + ')';
  key.append(el('span', { text: p.name + ' ' + fmtNum(p.low) + ' ' }), bar, el('span', { text: ' ' + fmtNum(p.high) + (p.log ? ' (log scale)' : '') }));
  return key;
}

function width(box) {
  return Math.max(280, Math.floor(box.clientWidth || 600) - 4);
}

// One uPlot in a titled panel. set() replaces data and series; the plot is
// rebuilt only when the series change, else just given the new data.
export class Chart {
  constructor(parent, name, title, opts) {
    this.name = name;
    this.opts = opts || {};
    this.box = el('div', { class: 'chart', id: 'chart-' + name });
    this.note = el('p', { class: 'chart-note muted' });
    this.empty = el('p', { class: 'muted empty', text: 'No data yet.' });
    parent.append(el('section', { class: 'panel' }, el('h3', { text: title }), this.note, this.empty, this.box));
    this.plot = null;
    this.key = null;
    this.onResize = () => {
      if (this.plot) this.plot.setSize({ width: width(this.box), height: HEIGHT });
    };
    window.addEventListener('resize', this.onResize);
  }

  // data: uPlot's [xs, ys1, ...]; series: uPlot series options (without x);
  // key: a string that changes when the series change.
  set(data, series, key, scales) {
    const hasData = data[0].length > 0;
    this.empty.hidden = hasData;
    if (!this.plot || key !== this.key) {
      if (this.plot) this.plot.destroy();
      this.key = key;
      this.plot = new uPlot({
        width: width(this.box),
        height: HEIGHT,
        legend: { show: false },
        cursor: { drag: { x: true, y: false } },
        scales: Object.assign({ x: { time: false } }, scales || {}),
        axes: [
          { label: this.opts.xLabel, values: this.opts.xValues },
          { label: this.opts.yLabel, size: 60, values: (u, vals) => vals.map(fmtNum) },
        ],
        series: [{}].concat(series),
      }, data, this.box);
      window.bdDash.charts[this.name] = this.plot;
    } else {
      this.plot.setData(data);
    }
  }

  destroy() {
    window.removeEventListener('resize', this.onResize);
    if (this.plot) this.plot.destroy();
    this.plot = null;
    delete window.bdDash.charts[this.name];
  }
}

export function steppedPaths() {
  return uPlot.paths.stepped({ align: 1 });
}

export function noPaths() {
  return null;
}
