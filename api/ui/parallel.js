// parallel.js: a parallel-coordinates plot of a study's trials as SVG: one
// vertical axis per parameter (log axes for log parameters, one tick per
// choice for categorical ones, an "inactive" tick below the axis for a
// conditional parameter that is off), then the budget when the trials ran at
// several, then the objective value last. One polyline per trial, coloured
// by its value (dark = better, pale = worse, worst drawn first so the good
// lines lie on top); the best trial is drawn last, thick and red.
// Everything a user named (parameters, choices) goes in through textContent.
import { fmtNum } from './dom.js';
import { ramp } from './charts.js';

const NS = 'http://www.w3.org/2000/svg';
const HEIGHT = 380;
const M = { top: 46, bottom: 34, left: 110, right: 60 };
const INACTIVE_GAP = 22; // px below an axis for "inactive"
export const MAX_AXES = 24;

function svg(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function short(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// A numeric axis over [lo, hi] (log when asked and possible): t(v) in [0, 1].
function numAxis(lo, hi, log) {
  log = log && lo > 0 && hi > 0;
  const f = (v) => (log ? Math.log(v) : v);
  const a = f(lo), b = f(hi);
  const t = (v) => (typeof v !== 'number' || !Number.isFinite(f(v)) ? null : b > a ? (f(v) - a) / (b - a) : 0.5);
  const mid = log ? Math.sqrt(lo * hi) : (lo + hi) / 2;
  const ticks = lo === hi ? [[0.5, lo]] : [[0, lo], [t(mid), mid], [1, hi]];
  return { t, log, ticks: ticks.map(([p, v]) => [p, fmtNum(v)]) };
}

// The axes for the study's parameters (at most MAX_AXES, in the given
// order), the budget (when several) and the value; each axis maps a trial to
// t in [0, 1] (top = 1), or 'inactive', or null (no value: line not drawn).
export function axesFor(study, params, trials) {
  const axes = [];
  for (const p of params.slice(0, MAX_AXES)) {
    const conditional = !!p.when;
    if (p.type === 'categorical') {
      const keys = (p.choices || []).map((c) => JSON.stringify(c));
      const k = Math.max(1, keys.length);
      axes.push({
        name: p.name, kind: 'categorical', conditional,
        at: (t) => (t.config && p.name in t.config ? ((i) => (i < 0 ? null : (i + 0.5) / k))(keys.indexOf(JSON.stringify(t.config[p.name]))) : 'inactive'),
        ticks: (p.choices || []).slice(0, 30).map((c, i) => [(i + 0.5) / k, short(c, 16)]),
      });
    } else {
      const ax = numAxis(p.low, p.high, p.log);
      axes.push({
        name: p.name, kind: ax.log ? 'log' : 'linear', conditional,
        at: (t) => (t.config && typeof t.config[p.name] === 'number' ? ax.t(t.config[p.name]) : 'inactive'),
        ticks: ax.ticks,
      });
    }
  }
  const budgets = trials.map((t) => t.budget).filter((b) => typeof b === 'number');
  if (new Set(budgets).size > 1) {
    const lo = Math.min(...budgets), hi = Math.max(...budgets);
    const ax = numAxis(lo, hi, lo > 0 && hi / lo >= 10);
    // A few budgets (a Hyperband's rungs): a tick at each.
    const distinct = [...new Set(budgets)].sort((a, b) => a - b);
    const ticks = distinct.length <= 6 ? distinct.map((b) => [ax.t(b), fmtNum(b)]) : ax.ticks;
    axes.push({ name: (study.resource && study.resource.name) || 'budget', kind: ax.log ? 'log' : 'linear', budget: true, at: (t) => ax.t(t.budget), ticks });
  }
  const vals = trials.map((t) => t.value);
  const lo = vals.length ? Math.min(...vals) : 0, hi = vals.length ? Math.max(...vals) : 1;
  // A log value axis when the values span more than two decades: one
  // diverged run would otherwise squash every other line onto one pixel.
  const ax = numAxis(lo, hi, lo > 0 && hi / lo > 100);
  axes.push({ name: (study.objective && study.objective.metric) || 'value', kind: ax.log ? 'log' : 'linear', value: true, at: (t) => ax.t(t.value), ticks: ax.ticks });
  return axes;
}

// Draws the plot into box (emptied first) for trials (completed, with a
// value); returns {lines, best (trial id), axes (names)}.
export function drawParallel(box, study, params, trials) {
  while (box.firstChild) box.removeChild(box.firstChild);
  const minimize = !(study.objective && study.objective.goal === 'maximize');
  const axes = axesFor(study, params, trials);
  const valueAxis = axes[axes.length - 1];
  const W = Math.max(600, Math.floor(box.clientWidth || 900) - 4);
  const hasInactive = axes.some((a) => a.conditional);
  const bottom = HEIGHT - M.bottom - (hasInactive ? INACTIVE_GAP : 0);
  const plotH = bottom - M.top;
  const step = axes.length > 1 ? (W - M.left - M.right) / (axes.length - 1) : 0;
  const X = (k) => M.left + k * step;
  const Y = (t) => (t === 'inactive' ? bottom + INACTIVE_GAP - 4 : bottom - t * plotH);
  const root = svg('svg', { id: 'parallel', width: W, height: HEIGHT, viewBox: '0 0 ' + W + ' ' + HEIGHT, role: 'img' });
  root.append(svg('title', null, 'Parallel coordinates of ' + trials.length + ' trials'));

  // Goodness in [0, 1] (1 = best) from the value axis: colour and draw order.
  const good = (t) => {
    const v = valueAxis.at(t);
    return v === null ? 0 : minimize ? 1 - v : v;
  };
  let best = null;
  for (const t of trials) {
    if (!best || (minimize ? t.value < best.value : t.value > best.value) || (t.value === best.value && t.id < best.id)) best = t;
  }
  const lines = svg('g', { class: 'pc-lines', fill: 'none' });
  const order = trials.slice().sort((a, b) => good(a) - good(b) || a.id - b.id);
  let drawn = 0;
  const line = (t, isBest) => {
    const pts = [];
    for (let k = 0; k < axes.length; k++) {
      const v = axes[k].at(t);
      if (v === null) return null;
      pts.push(X(k).toFixed(1) + ',' + Y(v).toFixed(1));
    }
    const g = good(t);
    const pl = svg('polyline', {
      class: isBest ? 'pc-line pc-best' : 'pc-line', 'data-trial': t.id, 'data-value': t.value,
      points: pts.join(' '), stroke: isBest ? '#d62728' : ramp(0.9 * (1 - g)),
      'stroke-width': isBest ? 3 : 1.2, 'stroke-opacity': isBest ? 1 : 0.35 + 0.5 * g,
    });
    const cfg = Object.entries(t.config || {}).map(([k, v]) => k + '=' + (typeof v === 'number' ? fmtNum(v) : String(v))).join(', ');
    pl.append(svg('title', null, 'trial ' + t.id + ': ' + fmtNum(t.value) + (typeof t.budget === 'number' ? ' at budget ' + fmtNum(t.budget) : '') + ' (' + cfg + ')'));
    drawn++;
    return pl;
  };
  for (const t of order) if (t !== best) {
    const pl = line(t, false);
    if (pl) lines.append(pl);
  }
  if (best) {
    const pl = line(best, true);
    if (pl) lines.append(pl);
  }

  const ax = svg('g', { class: 'pc-axes' });
  axes.forEach((a, k) => {
    const x = X(k);
    const g = svg('g', { class: 'pc-axis', 'data-axis': a.name, 'data-kind': a.kind });
    g.append(svg('line', { x1: x, x2: x, y1: M.top, y2: bottom, stroke: '#1d2430', 'stroke-width': 1 }));
    const label = svg('text', { x, y: M.top - 26, 'text-anchor': 'middle', class: 'pc-name' + (a.value ? ' pc-value' : '') }, short(a.name, 18));
    label.append(svg('title', null, a.name));
    g.append(label);
    const sub = a.value ? (minimize ? 'lower is better' : 'higher is better') : a.budget ? 'budget' : a.kind === 'log' ? 'log' : '';
    if (sub) g.append(svg('text', { x, y: M.top - 12, 'text-anchor': 'middle', class: 'pc-sub' }, sub + (a.value && a.kind === 'log' ? ', log' : '')));
    for (const [t, text] of a.ticks) {
      const y = Y(t);
      g.append(svg('line', { x1: x - 4, x2: x, y1: y, y2: y, stroke: '#1d2430' }));
      g.append(svg('text', { x: x - 6, y: y + 4, 'text-anchor': 'end', class: 'pc-tick' }, text));
    }
    if (a.conditional) g.append(svg('text', { x: x - 6, y: Y('inactive') + 4, 'text-anchor': 'end', class: 'pc-tick' }, 'inactive'));
    ax.append(g);
  });
  root.append(lines, ax);
  box.append(root);
  return { lines: drawn, best: best ? best.id : null, axes: axes.map((a) => a.name) };
}
