// importance.js: which parameters matter for a study's objective, computed
// in the browser from the completed trials. Pure functions, no DOM: the
// node test (tests/browser/importance.test.mjs) imports this file as is.
//
// Method: permutation importance over a small random forest (Breiman 2001,
// "Random Forests", section 10: out-of-bag permutation). Why this one:
// - sound on a few hundred trials: a forest needs no kernel or length-scale
//   fit, copes with mixed float / int / categorical / inactive-conditional
//   parameters, and is invariant to monotone transforms (a log-scaled
//   learning rate needs no special care); irrelevant parameters do not spoil
//   the fit as they would a k-NN distance;
// - honest: each tree is scored on the trials its bootstrap left out (OOB),
//   so an importance is a loss of predictive accuracy on unseen trials, not
//   a measure of how often a tree split on a feature (impurity importance
//   favours features with many distinct values); the forest's OOB R² says
//   whether there is anything to explain at all;
// - cheap: 64 trees on at most 500 rows take tens of milliseconds.
// fANOVA would give interaction terms too but needs a marginalisation over
// every tree's partition, more code for the same ranking of main effects.
// Known limit: permuting one of two correlated features understates both;
// the trials of a sampler are close to independent draws early on, less so
// once a model-based scheduler concentrates them.
//
// The forest is fitted to the rank of each value (0 = lowest, 1 = highest),
// not the value: one diverged run (loss 1e6) would otherwise own the squared
// error. Randomness (bootstraps, feature subsets, permutations) comes from a
// seeded generator, so the same trials give the same numbers.

// A small seeded PRNG (mulberry32): uniform floats in [0, 1).
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(a, rng) {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  return a;
}

// The trials to explain: completed, with a finite value, one per
// configuration (config_id) at its largest budget, ties to the later trial.
// A multi-fidelity scheduler runs one configuration at growing budgets and
// only the last, largest one says how good it is; a value at a lower budget
// would count the same configuration twice, once pessimistically.
export function finalTrials(trials) {
  const by = new Map();
  for (const t of trials) {
    if (!t || t.state !== 'completed' || typeof t.value !== 'number' || !Number.isFinite(t.value) || !t.config) continue;
    const key = t.config_id !== undefined && t.config_id !== null ? 'c' + t.config_id : 't' + t.id;
    const o = by.get(key);
    const b = typeof t.budget === 'number' ? t.budget : 0;
    const ob = o && typeof o.budget === 'number' ? o.budget : 0;
    if (!o || b > ob || (b === ob && t.id > o.id)) by.set(key, t);
  }
  return [...by.values()].sort((a, b) => a.id - b.id);
}

// Average ranks of xs scaled to [0, 1] (ties share their mean rank).
export function ranks01(xs) {
  const n = xs.length;
  const order = xs.map((v, i) => i).sort((a, b) => xs[a] - xs[b]);
  const r = new Array(n);
  for (let i = 0; i < n;) {
    let j = i;
    while (j + 1 < n && xs[order[j + 1]] === xs[order[i]]) j++;
    const mean = (i + j) / 2;
    for (let k = i; k <= j; k++) r[order[k]] = n > 1 ? mean / (n - 1) : 0.5;
    i = j + 1;
  }
  return r;
}

// Features of trials: one column (Float64Array) per parameter, plus the
// budget when withBudget. Floats and ints are taken as they are (a log
// parameter as its log, for the sentinel below); a categorical as the index
// of its choice. An inactive conditional parameter (absent from the config)
// gets a sentinel below every active value, so a tree can split it off.
export function encode(params, trials, withBudget) {
  const names = [];
  const cols = [];
  for (const p of params) {
    const col = new Float64Array(trials.length);
    if (p.type === 'categorical') {
      const keys = (p.choices || []).map((c) => JSON.stringify(c));
      trials.forEach((t, i) => {
        col[i] = t.config && p.name in t.config ? keys.indexOf(JSON.stringify(t.config[p.name])) : -1;
      });
    } else {
      const log = p.log && p.low > 0;
      const f = (v) => (log ? Math.log(v) : v);
      const lo = f(p.low), hi = f(p.high);
      const inactive = lo - Math.max(1, Math.abs(hi - lo));
      trials.forEach((t, i) => {
        const v = t.config ? t.config[p.name] : undefined;
        col[i] = typeof v === 'number' && (!log || v > 0) && Number.isFinite(f(v)) ? f(v) : inactive;
      });
    }
    names.push(p.name);
    cols.push(col);
  }
  if (withBudget) {
    names.push('budget');
    cols.push(Float64Array.from(trials, (t) => (typeof t.budget === 'number' ? t.budget : 0)));
  }
  return { names, cols };
}

// ---- a regression forest on columns ----

function leaf(y, idx) {
  let s = 0;
  for (const i of idx) s += y[i];
  return { v: s / idx.length };
}

// The best split of idx over feature f: {thr, gain} or null. gain is the
// drop in the sum of squared errors; both sides keep >= minLeaf rows.
function bestSplit(col, y, idx, minLeaf) {
  const n = idx.length;
  const order = idx.slice().sort((a, b) => col[a] - col[b]);
  let sum = 0, sq = 0;
  for (const i of order) {
    sum += y[i];
    sq += y[i] * y[i];
  }
  const parent = sq - (sum * sum) / n;
  let ls = 0, lq = 0, best = null;
  for (let k = 0; k < n - 1; k++) {
    const i = order[k];
    ls += y[i];
    lq += y[i] * y[i];
    const nl = k + 1, nr = n - nl;
    if (col[order[k + 1]] === col[i] || nl < minLeaf || nr < minLeaf) continue;
    const rs = sum - ls, rq = sq - lq;
    const gain = parent - (lq - (ls * ls) / nl) - (rq - (rs * rs) / nr);
    if (gain > 1e-12 && (!best || gain > best.gain)) best = { thr: (col[i] + col[order[k + 1]]) / 2, gain };
  }
  return best;
}

// Grows a tree on rows idx. Features are tried in a random order until
// mtry of them offered a valid split (as scikit-learn does, so a node is not
// made a leaf only because the features drawn were constant there).
function grow(cols, y, idx, rng, opt, depth) {
  if (idx.length < 2 * opt.minLeaf || depth >= opt.maxDepth) return leaf(y, idx);
  const feats = shuffle(cols.map((c, f) => f), rng);
  let best = null, tried = 0;
  for (const f of feats) {
    const s = bestSplit(cols[f], y, idx, opt.minLeaf);
    if (!s) continue;
    if (!best || s.gain > best.gain) best = { f, thr: s.thr, gain: s.gain };
    if (++tried >= opt.mtry) break;
  }
  if (!best) return leaf(y, idx);
  const col = cols[best.f];
  const l = idx.filter((i) => col[i] <= best.thr);
  const r = idx.filter((i) => col[i] > best.thr);
  return { f: best.f, thr: best.thr, l: grow(cols, y, l, rng, opt, depth + 1), r: grow(cols, y, r, rng, opt, depth + 1) };
}

// The tree's prediction for row i, with feature pf read from row pi instead
// (pf = -1: no substitution).
function predict(node, cols, i, pf, pi) {
  while (node.v === undefined) {
    const x = node.f === pf ? cols[pf][pi] : cols[node.f][i];
    node = x <= node.thr ? node.l : node.r;
  }
  return node.v;
}

// Permutation importance of each column of enc ({names, cols}) for targets
// ys (numbers, ranked first). Options: seed, trees, maxRows (a seeded
// subsample above it), minLeaf, maxDepth, mtry.
// Returns {features: [{name, importance, se, share}] sorted by importance,
// largest first; r2 (the forest's OOB R² on the ranks); n; trees}.
// importance: the mean rise of a tree's OOB squared error (on ranks in
// [0, 1]) when the feature's values are shuffled among its OOB rows; se its
// standard error over trees; share: importance / the sum of the positive ones.
export function permutationImportance(enc, ys, options) {
  const o = Object.assign({ seed: 1, trees: 64, maxRows: 500, minLeaf: 3, maxDepth: 12 }, options || {});
  const rng = mulberry32(o.seed);
  const d = enc.cols.length;
  let rows = ys.map((v, i) => i);
  if (rows.length > o.maxRows) rows = shuffle(rows, rng).slice(0, o.maxRows).sort((a, b) => a - b);
  const n = rows.length;
  const cols = enc.cols.map((c) => Float64Array.from(rows, (i) => c[i]));
  const y = ranks01(rows.map((i) => ys[i]));
  const opt = { minLeaf: o.minLeaf, maxDepth: o.maxDepth, mtry: o.mtry || Math.max(1, Math.ceil(d / 3)) };
  const out = { features: [], r2: NaN, n, trees: 0 };
  if (n < 2 * o.minLeaf || d === 0) {
    out.features = enc.names.map((name) => ({ name, importance: 0, se: 0, share: 0 }));
    return out;
  }
  const sum = new Float64Array(d), sq = new Float64Array(d);
  const oobSum = new Float64Array(n), oobCount = new Uint32Array(n);
  let counted = 0;
  for (let t = 0; t < o.trees; t++) {
    const inBag = new Uint8Array(n);
    const bag = [];
    for (let k = 0; k < n; k++) {
      const i = Math.floor(rng() * n);
      bag.push(i);
      inBag[i] = 1;
    }
    const tree = grow(cols, y, bag, rng, opt, 0);
    const oob = [];
    for (let i = 0; i < n; i++) if (!inBag[i]) oob.push(i);
    if (oob.length < 2) continue;
    let base = 0;
    for (const i of oob) {
      const p = predict(tree, cols, i, -1, 0);
      oobSum[i] += p;
      oobCount[i]++;
      base += (y[i] - p) ** 2;
    }
    base /= oob.length;
    for (let f = 0; f < d; f++) {
      const perm = shuffle(oob.slice(), rng);
      let e = 0;
      oob.forEach((i, k) => {
        e += (y[i] - predict(tree, cols, i, f, perm[k])) ** 2;
      });
      const rise = e / oob.length - base;
      sum[f] += rise;
      sq[f] += rise * rise;
    }
    counted++;
  }
  out.trees = counted;
  let sse = 0, sst = 0, m = 0, mean = 0;
  for (let i = 0; i < n; i++) if (oobCount[i]) {
    mean += y[i];
    m++;
  }
  mean /= m || 1;
  for (let i = 0; i < n; i++) if (oobCount[i]) {
    sse += (y[i] - oobSum[i] / oobCount[i]) ** 2;
    sst += (y[i] - mean) ** 2;
  }
  out.r2 = m > 1 && sst > 0 ? 1 - sse / sst : NaN;
  const feats = enc.names.map((name, f) => {
    const imp = counted ? sum[f] / counted : 0;
    const v = counted > 1 ? Math.max(0, sq[f] / counted - imp * imp) * counted / (counted - 1) : 0;
    return { name, importance: imp, se: counted ? Math.sqrt(v / counted) : 0, share: 0 };
  });
  const pos = feats.reduce((s, f) => s + Math.max(0, f.importance), 0);
  for (const f of feats) f.share = pos > 0 ? Math.max(0, f.importance) / pos : 0;
  // Stable: ties keep the space's order.
  out.features = feats.map((f, k) => [f, k]).sort((a, b) => b[0].importance - a[0].importance || a[1] - b[1]).map((p) => p[0]);
  return out;
}

// The whole computation for a study: its parameters and the (final) trials
// -> permutationImportance, with the budget as a feature when the trials ran
// at more than one budget (so a low-budget value is not blamed on a parameter).
export function studyImportance(study, trials, options) {
  const params = (study && study.parameters) || [];
  const budgets = new Set(trials.map((t) => t.budget));
  const enc = encode(params, trials, budgets.size > 1);
  return permutationImportance(enc, trials.map((t) => t.value), options);
}
