// pareto.js: the Pareto plot of a study with several objectives (issue 41).
// Two objectives: one scatter, the second objective against the first, of
// the completed trials the study page holds (bounded: study.js's best and
// latest windows) and of the whole front (GET /v1/studies/{id}
// "pareto_front": feasible, non-dominated, completed trials), the front
// joined in objective order. Three or more: a matrix of pairs, one scatter
// per pair of the first MAX_OBJECTIVES objectives, the front's points
// unjoined (a projection of a front is not a curve). Infeasible trials
// (trial "feasible": false) are their own series, grey rings, never on the
// front. A diverged trial (value null) has no point and is counted in the note.
//
// uPlot draws aligned series over one sorted x: each point is its own row,
// the other series null there. window.bdDash.pareto holds, for the tests,
// the objectives drawn and the trial ids of each series.
import { el, clear, fmtNum } from './dom.js';
import { Chart, noPaths } from './charts.js';

export const MAX_OBJECTIVES = 4; // 6 pairs at most; the rest are named in the note

const FRONT = '#d62728';
const FEASIBLE = '#1f77b4';
const INFEASIBLE = '#9ca3af';

function pairsOf(n) {
  const out = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) out.push([i, j]);
  return out;
}

function label(o) {
  return o.metric + ' (' + (o.goal === 'maximize' ? 'max' : 'min') + ')';
}

// A trial's values of the objectives drawn, or null when one is missing or not finite (diverged).
function pointOf(values, objectives) {
  if (!values || typeof values !== 'object') return null;
  const p = objectives.map((o) => values[o.metric]);
  return p.every((v) => typeof v === 'number' && Number.isFinite(v)) ? p : null;
}

export class ParetoView {
  constructor(parent, study) {
    this.all = study.objectives || [];
    this.objectives = this.all.slice(0, MAX_OBJECTIVES);
    this.pairs = pairsOf(this.objectives.length);
    this.matrix = this.pairs.length > 1;
    this.note = el('p', { class: 'muted', id: 'pareto-note' });
    this.grid = el('div', { id: 'pareto', class: this.matrix ? 'pareto-matrix' : 'pareto-one', dataset: { pairs: String(this.pairs.length) } });
    const title = this.matrix ? 'Pareto front: every pair of objectives' : 'Pareto front';
    parent.append(el('section', { class: 'panel wide', id: 'pareto-panel' }, el('h3', { text: title }), this.note,
      el('div', { class: 'colour-key', id: 'pareto-key' }, this.key(FRONT, 'Pareto front (feasible, non-dominated)'),
        this.key(FEASIBLE, 'feasible, dominated'), this.key(INFEASIBLE, 'infeasible', true)), this.grid));
    this.charts = this.pairs.map(([i, j]) => new Chart(this.grid, 'pareto_' + i + '_' + j,
      this.objectives[j].metric + ' vs ' + this.objectives[i].metric,
      { xLabel: label(this.objectives[i]), yLabel: label(this.objectives[j]) }));
  }

  key(colour, text, ring) {
    const sw = el('span', { class: 'swatch' + (ring ? ' ring' : '') });
    if (ring) sw.style.borderColor = colour;
    else sw.style.background = colour;
    return el('span', { class: 'key-item' }, sw, text);
  }

  // study: GET /v1/studies/{id}; trials: the completed and other trials the page holds.
  set(study, trials) {
    const objectives = this.objectives;
    const front = [];
    const frontIds = new Set();
    for (const p of study.pareto_front || []) {
      const v = pointOf(p.values, objectives);
      frontIds.add(p.trial_id);
      if (v) front.push({ id: p.trial_id, v });
    }
    const feasible = [];
    const infeasible = [];
    let diverged = 0;
    for (const t of trials) {
      if (t.state !== 'completed' || frontIds.has(t.id)) continue;
      const v = pointOf(t.values, objectives);
      if (!v) {
        diverged++;
        continue;
      }
      (t.feasible === false ? infeasible : feasible).push({ id: t.id, v });
    }
    this.charts.forEach((chart, k) => {
      const [i, j] = this.pairs[k];
      const rows = [];
      for (const [s, list] of [[1, feasible], [2, infeasible], [3, front]]) for (const p of list) rows.push([p.v[i], p.v[j], s]);
      rows.sort((a, b) => a[0] - b[0] || a[2] - b[2]);
      const data = [rows.map((r) => r[0])];
      for (const s of [1, 2, 3]) data.push(rows.map((r) => (r[2] === s ? r[1] : null)));
      chart.set(data, [
        { label: 'feasible, dominated', stroke: FEASIBLE, paths: noPaths, points: { show: true, size: 6, fill: FEASIBLE } },
        { label: 'infeasible', stroke: INFEASIBLE, paths: noPaths, points: { show: true, size: 7, width: 1.5, fill: '#fff' } },
        { label: 'Pareto front', stroke: FRONT, width: 1.5, spanGaps: !this.matrix, paths: this.matrix ? noPaths : undefined, points: { show: true, size: 8, fill: FRONT } },
      ], 'pareto');
    });
    const hv = typeof study.hypervolume === 'number' ? ' Hypervolume ' + fmtNum(study.hypervolume) +
      (study.reference_point ? ' against the reference point ' + Object.entries(study.reference_point).map(([k, v]) => k + ' ' + fmtNum(v)).join(', ') : '') + '.' : '';
    const left = this.all.length > objectives.length ? ' Objectives past the first ' + objectives.length + ' (' + this.all.slice(objectives.length).map((o) => o.metric).join(', ') + ') are not drawn.' : '';
    const whole = study.pareto_front_truncated ? 'The front (the first ' + front.length + ' trials the API lists of a larger one)' : 'The whole front: ' + front.length + ' trials';
    this.note.textContent = whole + '; of the trials this page holds, ' + feasible.length +
      ' feasible and dominated, ' + infeasible.length + ' infeasible (grey rings)' + (diverged ? ', ' + diverged + ' diverged (no point)' : '') + '.' + hv + left;
    window.bdDash.pareto = {
      objectives: objectives.map((o) => o.metric),
      pairs: this.pairs.map(([i, j]) => 'pareto_' + i + '_' + j),
      front: front.map((p) => p.id),
      feasible: feasible.map((p) => p.id),
      infeasible: infeasible.map((p) => p.id),
      diverged,
    };
  }

  destroy() {
    for (const c of this.charts) c.destroy();
    delete window.bdDash.pareto;
  }
}
