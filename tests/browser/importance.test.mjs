// importance.test.mjs: the dashboard's parameter-importance math
// (api/ui/importance.js) on fixed vectors, in node without a browser.
// Registered in tests/CMakeLists.txt as browser/importance. Each check prints
// ok or FAIL; the last line is "N passed, M failed"; exit 1 on a failure.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = process.env.BD_SOURCE_DIR || path.resolve(here, '../..');
const { mulberry32, finalTrials, ranks01, encode, permutationImportance, studyImportance } =
  await import(pathToFileURL(path.join(src, 'api/ui/importance.js')).href);

let passed = 0, failed = 0;
function check(ok, what, detail) {
  if (ok) passed++;
  else failed++;
  console.log((ok ? 'ok   ' : 'FAIL ') + what + (ok || detail === undefined ? '' : ': ' + detail));
}
const names = (r) => r.features.map((f) => f.name);
const show = (r) => JSON.stringify(r.features.map((f) => [f.name, +f.importance.toFixed(4), +f.share.toFixed(3)])) + ' r2=' + r.r2.toFixed(3);

// n trials of a space, configs drawn from a fixed generator, value = fn(config).
function trialsOf(params, n, fn, seed) {
  const rng = mulberry32(seed || 42);
  const out = [];
  for (let i = 0; i < n; i++) {
    const config = {};
    for (const p of params) {
      if (p.type === 'categorical') config[p.name] = p.choices[Math.floor(rng() * p.choices.length)];
      else if (p.log) config[p.name] = Math.exp(Math.log(p.low) + rng() * (Math.log(p.high) - Math.log(p.low)));
      else config[p.name] = p.low + rng() * (p.high - p.low);
    }
    out.push({ id: i + 1, config_id: i + 1, state: 'completed', budget: 1, config, value: fn(config, rng) });
  }
  return out;
}
const U = (name) => ({ name, type: 'float', low: 0, high: 1 });

// mulberry32: fixed seed -> fixed stream in [0, 1).
{
  const a = mulberry32(7), b = mulberry32(7);
  const xs = Array.from({ length: 1000 }, a);
  check(xs.every((x, i) => x === b() && x >= 0 && x < 1), 'mulberry32 is deterministic and in [0, 1)');
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  check(Math.abs(mean - 0.5) < 0.03, 'mulberry32 is about uniform', mean);
}

// ranks01: ties share the mean rank.
check(JSON.stringify(ranks01([3, 1, 2, 2])) === JSON.stringify([1, 0, 0.5, 0.5]), 'ranks01 of [3,1,2,2]', JSON.stringify(ranks01([3, 1, 2, 2])));
check(JSON.stringify(ranks01([5])) === '[0.5]', 'ranks01 of one value');

// finalTrials: one per config_id at its largest budget; non-completed and null values dropped.
{
  const ts = [
    { id: 1, config_id: 1, state: 'completed', budget: 1, value: 0.9, config: { x: 0.1 } },
    { id: 2, config_id: 2, state: 'completed', budget: 1, value: 0.5, config: { x: 0.2 } },
    { id: 3, config_id: 1, state: 'completed', budget: 3, value: 0.7, config: { x: 0.1 } },
    { id: 4, config_id: 1, state: 'completed', budget: 9, value: 0.4, config: { x: 0.1 } },
    { id: 5, config_id: 2, state: 'stopped', budget: 3, value: 0.3, config: { x: 0.2 } },
    { id: 6, config_id: 3, state: 'completed', budget: 1, value: null, config: { x: 0.3 } },
    { id: 7, config_id: 4, state: 'running', budget: 1, config: { x: 0.4 } },
  ];
  const f = finalTrials(ts);
  check(JSON.stringify(f.map((t) => t.id)) === '[2,4]', 'finalTrials keeps each config at its largest completed budget', JSON.stringify(f.map((t) => t.id)));
}

// encode: log params as logs, categorical as indices, inactive below the range.
{
  const params = [{ name: 'lr', type: 'float', low: 1e-4, high: 1, log: true }, { name: 'opt', type: 'categorical', choices: ['sgd', 'adam'] },
    { name: 'm', type: 'float', low: 0, high: 0.9, when: { opt: ['sgd'] } }];
  const e = encode(params, [{ config: { lr: 1e-2, opt: 'adam' }, budget: 3 }, { config: { lr: 1, opt: 'sgd', m: 0.5 }, budget: 9 }], true);
  check(JSON.stringify(e.names) === '["lr","opt","m","budget"]', 'encode names the columns, budget last', JSON.stringify(e.names));
  check(Math.abs(e.cols[0][0] - Math.log(1e-2)) < 1e-12 && e.cols[0][1] === 0, 'encode takes a log parameter\'s log');
  check(e.cols[1][0] === 1 && e.cols[1][1] === 0, 'encode maps a categorical to its choice index');
  check(e.cols[2][0] < 0 && e.cols[2][1] === 0.5, 'encode puts an inactive parameter below its range', Array.from(e.cols[2]).join(','));
}

// Only x1 matters (a non-monotone function of it): x1 first, with most of the importance.
{
  const ts = trialsOf([U('x1'), U('x2'), U('x3')], 200, (c) => Math.sin(6 * c.x1));
  const r = studyImportance({ parameters: [U('x1'), U('x2'), U('x3')] }, ts, { seed: 1 });
  check(names(r)[0] === 'x1', 'only x1 matters: x1 ranks first', show(r));
  check(r.features[0].share > 0.9, 'only x1 matters: x1 has > 90% of the importance', show(r));
  check(r.r2 > 0.8, 'only x1 matters: the forest explains the ranks (OOB R² > 0.8)', show(r));
  check(r.features.slice(1).every((f) => Math.abs(f.importance) < r.features[0].importance / 20), 'only x1 matters: x2, x3 near zero', show(r));
  const again = studyImportance({ parameters: [U('x1'), U('x2'), U('x3')] }, ts, { seed: 1 });
  check(JSON.stringify(again) === JSON.stringify(r), 'the same seed gives the same numbers');
  const other = studyImportance({ parameters: [U('x1'), U('x2'), U('x3')] }, ts, { seed: 2 });
  check(JSON.stringify(other) !== JSON.stringify(r) && names(other)[0] === 'x1', 'another seed: other numbers, same winner', show(other));
}

// Order is kept: value = 3*x1 + x2 (+ an irrelevant x3): x1 > x2 > x3.
{
  const ps = [U('x3'), U('x2'), U('x1')];
  const ts = trialsOf(ps, 300, (c) => 3 * c.x1 + c.x2, 5);
  const r = studyImportance({ parameters: ps }, ts, { seed: 3 });
  check(JSON.stringify(names(r)) === '["x1","x2","x3"]', '3*x1 + x2: ranked x1, x2, x3', show(r));
}

// A categorical decides; a log-scaled float adds a little; a float is noise.
{
  const ps = [U('noise'), { name: 'lr', type: 'float', low: 1e-5, high: 1, log: true }, { name: 'algo', type: 'categorical', choices: ['a', 'b', 'c', 'd'] }];
  const q = { a: 0, b: 3, c: 1, d: 2 };
  const ts = trialsOf(ps, 250, (c) => q[c.algo] + 0.3 * Math.abs(Math.log10(c.lr) + 3), 9);
  const r = studyImportance({ parameters: ps }, ts, { seed: 4 });
  check(JSON.stringify(names(r)) === '["algo","lr","noise"]', 'categorical algo first, log lr second, noise last', show(r));
}

// Pure noise: the OOB R² says there is nothing to explain.
{
  const ps = [U('a'), U('b')];
  const ts = trialsOf(ps, 200, (c, rng) => rng(), 11);
  const r = studyImportance({ parameters: ps }, ts, { seed: 5 });
  check(r.r2 < 0.1, 'noise only: OOB R² near or below zero', show(r));
}

// Multi-fidelity: budget is a feature when trials ran at several budgets, and a
// value that depends only on the budget is not blamed on a parameter.
{
  const ps = [U('x'), U('y')];
  const ts = trialsOf(ps, 240, () => 0, 13).map((t, i) => Object.assign(t, { budget: [1, 3, 9][i % 3] }));
  for (const t of ts) t.value = 1 / t.budget;
  const r = studyImportance({ parameters: ps }, ts, { seed: 6 });
  check(names(r)[0] === 'budget' && r.features[0].share > 0.95, 'value set by the budget: budget first', show(r));
  const one = studyImportance({ parameters: ps }, ts.map((t) => Object.assign({}, t, { budget: 1 })), { seed: 6 });
  check(!names(one).includes('budget'), 'one budget: no budget column');
}

// Bounded: a seeded subsample of maxRows rows; fewer rows than two leaves: all zero.
{
  const ts = trialsOf([U('x1'), U('x2')], 900, (c) => c.x2, 17);
  const r = permutationImportance(encode([U('x1'), U('x2')], ts, false), ts.map((t) => t.value), { seed: 1, maxRows: 300 });
  check(r.n === 300 && names(r)[0] === 'x2', 'maxRows subsamples (300 of 900) and still finds x2', show(r));
  const tiny = permutationImportance(encode([U('x1')], ts.slice(0, 3), false), [1, 2, 3], {});
  check(tiny.n === 3 && tiny.features.length === 1 && tiny.features[0].share === 0 && Number.isNaN(tiny.r2), 'three trials: no fit, zero importances');
}

// Cheap: 500 rows x 12 parameters in well under a second.
{
  const ps = Array.from({ length: 12 }, (v, i) => U('p' + i));
  const ts = trialsOf(ps, 500, (c) => c.p3 * c.p7, 21);
  const t0 = process.hrtime.bigint();
  const r = studyImportance({ parameters: ps }, ts, { seed: 7 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  check(new Set(names(r).slice(0, 2)).has('p3') && new Set(names(r).slice(0, 2)).has('p7'), 'p3*p7: p3 and p7 are the top two', show(r));
  console.log('     (500 trials x 12 parameters: ' + ms.toFixed(0) + ' ms)');
}

console.log(passed + ' passed, ' + failed + ' failed');
process.exit(failed ? 1 : 0);
