// dashboard.test.mjs: the web dashboard (/ui/) as a person sees it, in
// Debian's headless Chromium driven by playwright-core, against the real
// daemon ($BANDITD) on a free port with a temporary database.
//
// Data: user alice runs a real Hyperband study (clients/examples/
// sklearn_worker.py: SGDClassifier.partial_fit on scikit-learn's digits,
// one epoch per step, validation error reported per epoch, stops obeyed,
// 2 worker threads, R=27, eta=3) and owns a study named like an XSS payload;
// bob owns a study alice must never see; and bd_loadgen ($BD_LOADGEN) fills
// a 100,000-trial random-search study of alice's meanwhile. A second
// sklearn_worker runs ASHA (150 trials) beside the Hyperband one.
//
// Checks: login by pasting the token (kept in sessionStorage, never in a
// URL), the studies list (alice's rows, not bob's), the study page (the
// charts were given points and drew coloured pixels, the trial table has
// rows, the scheduler view shows brackets, CSV download has a header and
// rows, live refresh picks up a new trial), the hostile name shown as text
// with no dialog, a refused token sends back to login, logout clears
// sessionStorage; the explain view (parallel coordinates: one line per
// configuration at its largest budget, recomputed here from the API;
// importance bars sorted and seeded), the comparison of the Hyperband study
// with a real ASHA run (ticked in the list, then by URL with bob's id
// refused), paused / metadata / user_attrs added to the daemon's answers
// (hostile text); a study with two objectives and a constraint (the Pareto
// plot, its front the API's, infeasible trials a series of their own, the
// hypervolume over time) and one with three (a matrix of pairs); then the
// 100,000-trial study shows its total while the
// page fetches less than 5 MB. Screenshots go to screenshots/ (or
// $BD_SCREENSHOT_DIR). Prints "N passed, M failed" and exits 1 on a failure.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const srcDir = process.env.BD_SOURCE_DIR || path.resolve(here, '../..');
const banditd = process.env.BANDITD;
const loadgen = process.env.BD_LOADGEN;
const CHROMIUM = '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror=alert(1)>';
const BIG_TRIALS = Number(process.env.BD_BIG_TRIALS || 100000);
const BYTES_BOUND = 5 * 1024 * 1024;
const shotDir = process.env.BD_SCREENSHOT_DIR || path.join(here, 'screenshots');

let passed = 0;
let failed = 0;
const children = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bd-browser-'));

function check(ok, what, detail) {
  if (ok) {
    passed++;
    console.log('ok   ' + what);
  } else {
    failed++;
    console.log('FAIL ' + what + (detail !== undefined ? ': ' + detail : ''));
  }
  return ok;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

function run(cmd, args, logName, opts) {
  const log = fs.openSync(path.join(tmp, logName), 'a');
  const child = spawn(cmd, args, Object.assign({ stdio: ['ignore', log, log] }, opts || {}));
  child.done = new Promise((resolve) => {
    child.on('exit', (code, sig) => resolve(code === null ? sig : code));
    child.on('error', (e) => {
      fs.writeSync(log, cmd + ': ' + e.message + '\n');
      resolve('spawn error: ' + e.message);
    });
  });
  children.push(child);
  return child;
}

function tail(logName, n) {
  try {
    return fs.readFileSync(path.join(tmp, logName), 'utf8').split('\n').slice(-(n || 20)).join('\n');
  } catch (e) {
    return '(no log)';
  }
}

// Waits for child's exit, killing it after ms (SIGINT first: the worker ends its loop).
async function finish(child, ms) {
  const t = setTimeout(() => child.kill('SIGINT'), ms);
  const t2 = setTimeout(() => child.kill('SIGKILL'), ms + 10000);
  const code = await child.done;
  clearTimeout(t);
  clearTimeout(t2);
  return code;
}

let base = '';
async function api(method, p, token, body) {
  const r = await fetch(base + p, {
    method,
    headers: Object.assign({ Authorization: 'Bearer ' + token }, body ? { 'Content-Type': 'application/json' } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch (e) {
    json = text;
  }
  if (!r.ok) throw new Error(method + ' ' + p + ' -> ' + r.status + ' ' + text.slice(0, 300));
  return json;
}

// A random-search study of owner's named name, with `trials` completed trials
// (each with two measurements).
async function smallStudy(token, name, trials) {
  const s = await api('POST', '/v1/studies', token, {
    name,
    parameters: [{ name: 'x', type: 'float', low: 0, high: 1 }, { name: 'kind', type: 'categorical', choices: ['a', HOSTILE] }],
    objective: { metric: 'loss', goal: 'minimize' },
    scheduler: { name: 'random', options: { max_trials: 100 } },
    seed: 3,
  });
  for (let i = 0; i < trials; i++) {
    const t = (await api('POST', '/v1/studies/' + s.id + '/suggest', token, { worker: 'w', count: 1 })).trials[0];
    await api('POST', '/v1/trials/' + t.id + '/measurements', token, { step: 1, value: 1 - t.config.x / 2 });
    await api('POST', '/v1/trials/' + t.id + '/measurements', token, { step: 2, value: 1 - t.config.x });
    await api('POST', '/v1/trials/' + t.id + '/complete', token, { value: 1 - t.config.x });
  }
  return s;
}

// The other schedulers' own views: one small study each, driven through the
// API (n suggest -> measurements -> complete loops, values from the trial's config).
const OTHER_SCHEDULERS = {
  rising_bandits: {
    parameters: [{ name: 'algo', type: 'categorical', choices: ['svm', 'rf', 'knn'] }, { name: 'C', type: 'float', low: 0.1, high: 10, when: { algo: ['svm'] } }],
    objective: { metric: 'acc', goal: 'maximize' }, limits: { trials: 30 },
    scheduler: { name: 'rising_bandits', options: { arm_parameter: 'algo', window: 2 } },
  },
  spc: {
    parameters: [{ name: 'p', type: 'float', low: 0, high: 1 }], objective: { metric: 'runtime', goal: 'minimize' },
    instances: ['a.cnf', 'b.cnf', 'c.cnf'], resource: { name: 'seconds', min: 0.1, max: 60 }, scheduler: { name: 'spc', options: {} },
  },
  bo_bos: {
    parameters: [{ name: 'lr', type: 'float', low: 1e-4, high: 1, log: true }], objective: { metric: 'loss', goal: 'minimize' },
    resource: { name: 'epochs', min: 1, max: 12, integer: true }, scheduler: { name: 'bo_bos', options: { max_trials: 10 } },
  },
  asha: {
    parameters: [{ name: 'lr', type: 'float', low: 1e-4, high: 1, log: true }], objective: { metric: 'loss', goal: 'minimize' },
    resource: { name: 'epochs', min: 1, max: 9, integer: true }, scheduler: { name: 'asha', options: { eta: 3, max_trials: 30 } },
  },
};

async function driveStudy(token, name, def, n) {
  const s = await api('POST', '/v1/studies', token, Object.assign({ name, seed: 5 }, def));
  for (let i = 0; i < n; i++) {
    const r = await api('POST', '/v1/studies/' + s.id + '/suggest', token, { worker: 'w', count: 1 });
    if (!r.trials || !r.trials.length) break;
    const t = r.trials[0];
    const c = t.config;
    const q = c.algo ? { svm: 0.9, rf: 0.7, knn: 0.5 }[c.algo] : c.p !== undefined ? c.p : Math.abs(Math.log10(c.lr) + 2) / 4;
    let stopped = false;
    const steps = def.resource && def.resource.integer ? Math.max(1, Math.round(t.budget)) : 1;
    for (let st = 1; st <= steps && !stopped; st++) {
      const a = await api('POST', '/v1/trials/' + t.id + '/measurements', token, { step: st, value: q + 1 / (st + 1) });
      stopped = a.action === 'stop';
    }
    if (!stopped) await api('POST', '/v1/trials/' + t.id + '/complete', token, { value: def.scheduler.name === 'spc' ? q * t.budget : q + 1 / (steps + 1) });
  }
  return s;
}

// Studies with several objectives (issue 41), driven through the API with values
// from the config: two objectives and a memory constraint that cuts about half
// of the configs (memory_mb = 1000 y <= 512), one trial diverged (value null);
// and three objectives without constraints (the matrix of pairs).
const MO_PARAMS = [{ name: 'x', type: 'float', low: 0, high: 1 }, { name: 'y', type: 'float', low: 0, high: 1 }];
function moValues(c) {
  return { error: (c.x - 0.2) * (c.x - 0.2) + 0.1 * c.y, latency_ms: 10 * (1 - c.x) + 2 * c.y, memory_mb: 1000 * c.y, energy: Math.abs(c.x - c.y) };
}

async function moStudy(token, name, objectives, constraints, n) {
  const s = await api('POST', '/v1/studies', token, {
    name, parameters: MO_PARAMS, objectives, constraints, seed: 9, scheduler: { name: 'random', options: { max_trials: 200 } },
  });
  for (let i = 0; i < n; i++) {
    const t = (await api('POST', '/v1/studies/' + s.id + '/suggest', token, { worker: 'w', count: 1 })).trials[0];
    const all = moValues(t.config);
    const values = {};
    for (const m of objectives.concat(constraints)) values[m.metric] = all[m.metric];
    await api('POST', '/v1/trials/' + t.id + '/complete', token, i === 3 ? { value: null, reason: 'diverged' } : { values });
  }
  return s;
}

// In the page: what uPlot was given and how many coloured (non-grey) pixels it drew.
function chartState(name) {
  const u = window.bdDash && window.bdDash.charts[name];
  if (!u) return null;
  const c = u.ctx.canvas;
  const px = u.ctx.getImageData(0, 0, c.width, c.height).data;
  let coloured = 0;
  for (let i = 0; i < px.length; i += 4) {
    const mx = Math.max(px[i], px[i + 1], px[i + 2]), mn = Math.min(px[i], px[i + 1], px[i + 2]);
    if (px[i + 3] > 100 && mx - mn > 40) coloured++; // axes, grid and text are grey or black
  }
  const series = u.data.length - 1;
  let points = 0;
  for (let s = 1; s < u.data.length; s++) points += u.data[s].filter((v) => v !== null && v !== undefined).length;
  return { xs: u.data[0].length, series, points, coloured, width: c.width, height: c.height };
}

async function main() {
  if (!banditd) throw new Error('BANDITD is not set (run through ctest)');
  if (!fs.existsSync(CHROMIUM)) throw new Error(CHROMIUM + ' is missing: docker/install-deps.sh --test installs Debian\'s chromium');
  fs.mkdirSync(shotDir, { recursive: true });

  // ---- the daemon and its data ----
  const port = await freePort();
  base = 'http://127.0.0.1:' + port;
  const db = path.join(tmp, 'bd.db');
  const daemon = run(banditd, ['--listen', '127.0.0.1:' + port, '--db', db, '--log-level', 'warn'], 'daemon.log');
  let admin = null;
  for (let i = 0; i < 100 && !admin; i++) {
    await sleep(100);
    try {
      const r = await fetch(base + '/healthz');
      if (r.ok) admin = fs.readFileSync(db + '.admin-token', 'utf8').trim();
    } catch (e) {
      /* not up yet */
    }
  }
  if (!admin) throw new Error('the daemon did not start:\n' + tail('daemon.log'));
  await api('POST', '/v1/users', admin, { name: 'alice' });
  await api('POST', '/v1/users', admin, { name: 'bob' });
  const alice = (await api('POST', '/v1/users/alice/tokens', admin)).token;
  const bob = (await api('POST', '/v1/users/bob/tokens', admin)).token;
  const aliceFile = path.join(tmp, 'alice.token');
  fs.writeFileSync(aliceFile, alice + '\n', { mode: 0o600 });

  const big = loadgen ? run(loadgen, ['--url', '127.0.0.1:' + port, '--token-file', aliceFile, '--workers', '8',
    '--trials', String(BIG_TRIALS), '--max-trials', String(BIG_TRIALS), '--measurements', '0', '--warmup', '0',
    '--duration', '600'], 'loadgen.log') : null;
  check(big !== null, 'bd_loadgen is available for the 100,000-trial study', 'BD_LOADGEN is not set');
  const worker = run('/usr/bin/python3', [path.join(srcDir, 'clients/examples/sklearn_worker.py'), '--url', base,
    '--token-file', aliceFile, '--create-study', 'hyperband', '27', '3', '--workers', '2', '--dataset', 'digits',
    '--checkpoint-dir', path.join(tmp, 'ckpt'), '--log-level', 'warning'], 'worker.log');
  // A second real run meanwhile, ASHA on the same space and resource: the comparison view's other study.
  const worker2 = run('/usr/bin/python3', [path.join(srcDir, 'clients/examples/sklearn_worker.py'), '--url', base,
    '--token-file', aliceFile, '--create-study', 'asha', '27', '3', '--max-trials', '150', '--workers', '1', '--dataset', 'digits',
    '--checkpoint-dir', path.join(tmp, 'ckpt2'), '--log-level', 'warning'], 'worker2.log');
  const hostile = await smallStudy(alice, HOSTILE, 4);
  const secret = await smallStudy(bob, 'bob-secret-study', 2);
  const [wcode, wcode2] = await Promise.all([finish(worker, 45000), finish(worker2, 45000)]);
  check(wcode === 0 || wcode === 'SIGINT', 'the Hyperband worker ran', 'exit ' + wcode + '\n' + tail('worker.log'));
  check(wcode2 === 0 || wcode2 === 'SIGINT', 'the ASHA worker ran', 'exit ' + wcode2 + '\n' + tail('worker2.log'));
  const studies = (await api('GET', '/v1/studies?limit=1000', alice)).studies;
  const hb = studies.find((s) => s.scheduler.name === 'hyperband');
  if (!hb) throw new Error('no Hyperband study:\n' + tail('worker.log'));
  check(hb.trials.completed > 5, 'the Hyperband study has completed trials', JSON.stringify(hb.trials));
  const asha = studies.find((s) => s.scheduler.name === 'asha');
  check(asha && asha.trials.completed > 2, 'the ASHA study has completed trials', JSON.stringify(asha && asha.trials));

  // ---- the browser ----
  const profile = fs.mkdtempSync(path.join(tmp, 'profile-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 1000 },
    acceptDownloads: true,
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  const dialogs = [];
  const pageErrors = [];
  const urls = [];
  let bytes = 0;
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('request', (r) => urls.push(r.url()));
  page.on('requestfinished', async (r) => {
    try {
      const s = await r.sizes();
      bytes += s.responseBodySize + s.responseHeadersSize;
    } catch (e) {
      /* the page went away */
    }
  });

  try {
    await page.goto(base + '/ui');
    check(page.url() === base + '/ui/', '/ui redirects to /ui/', page.url());
    await page.waitForSelector('#login #token');
    await page.fill('#token', alice);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#studies tbody tr[data-study]');
    const names = await page.$$eval('#studies a.study-link', (as) => as.map((a) => a.textContent));
    check(names.length >= 3, 'the studies list has alice\'s rows', names.length);
    check(!names.includes('bob-secret-study'), 'bob\'s study is absent from alice\'s list', JSON.stringify(names));
    check(names.includes(HOSTILE), 'the hostile study name is shown as text', JSON.stringify(names));
    check((await page.$$('#studies img')).length === 0, 'the hostile name made no <img> element');
    const stored = await page.evaluate(() => sessionStorage.getItem('banditd.token'));
    check(stored === alice, 'the token is kept in sessionStorage');
    check((await page.evaluate(() => document.cookie)) === '', 'no cookie is set');
    const hbRow = await page.$eval('#studies tr[data-study="' + hb.id + '"]', (tr) => tr.textContent);
    check(hbRow.includes('hyperband') && hbRow.includes(String(hb.trials.total)), 'the Hyperband row shows scheduler and trial count', hbRow);
    await page.screenshot({ path: path.join(shotDir, 'studies.png') });

    // ---- the Hyperband study ----
    await page.click('#studies tr[data-study="' + hb.id + '"] a.study-link');
    await page.waitForSelector('#view[data-loaded="' + hb.id + '"]', { timeout: 20000 });
    await page.waitForTimeout(300);
    for (const name of ['best_time', 'best_resource', 'curves', 'scatter']) {
      const st = await page.evaluate(chartState, name);
      check(st && st.points > 0 && st.xs > 0, 'chart ' + name + ' was given points', JSON.stringify(st));
      check(st && st.coloured > 50, 'chart ' + name + ' drew coloured pixels', JSON.stringify(st));
    }
    const curves = await page.evaluate(chartState, 'curves');
    check(curves && curves.series >= 5, 'the learning curves hold one series per trial', JSON.stringify(curves));
    const note = await page.textContent('#curves-note');
    check(/best \d+ completed trials/.test(note) && /latest \d+ trials/.test(note), 'the page says which trials the curves show', note);
    const latestN = Number((/latest (\d+) trials/.exec(note) || [])[1]);
    check(latestN === Math.min(100, hb.trials.total), 'the latest window holds the study\'s newest trials though other studies\' ids interleave', note);
    const rows = await page.$$('#trials tbody tr[data-trial]');
    check(rows.length > 0, 'the trial table has rows', rows.length);
    const brackets = await page.$$('#scheduler .bracket');
    check(brackets.length > 0, 'the scheduler view shows Hyperband brackets', brackets.length);
    const rungRows = await page.$$('#scheduler .bracket tbody tr');
    check(rungRows.length >= brackets.length, 'each bracket lists its rungs', rungRows.length);
    // The colour select redraws the curves with the same data.
    await page.selectOption('#colour-param', 'alpha');
    const recoloured = await page.evaluate(chartState, 'curves');
    check(recoloured && recoloured.points === curves.points, 'colouring by another parameter keeps the curves', JSON.stringify(recoloured));
    check((await page.$$('.colour-key .ramp')).length === 1, 'a numeric colour parameter shows its ramp');
    await page.selectOption('#colour-param', 'loss');
    const swatches = await page.$$eval('.colour-key .key-item', (ks) => ks.map((k) => k.textContent));
    check(JSON.stringify(swatches) === '["hinge","log_loss","modified_huber"]', 'a categorical colour parameter shows one swatch per choice', JSON.stringify(swatches));
    // Trial table: a state filter and the next page.
    await page.selectOption('#trial-state', 'completed');
    await page.waitForFunction(() => [...document.querySelectorAll('#trials tbody tr[data-trial]')].every((tr) => tr.classList.contains('st-completed')));
    check(true, 'the state filter shows completed trials only');
    if (hb.trials.completed > 50) {
      const first = await page.$eval('#trials tbody tr[data-trial]', (tr) => tr.dataset.trial);
      await page.click('#trials-next');
      await page.waitForFunction((f) => {
        const tr = document.querySelector('#trials tbody tr[data-trial]');
        return tr && tr.dataset.trial !== f;
      }, first);
      const second = await page.$eval('#trials tbody tr[data-trial]', (tr) => tr.dataset.trial);
      check(Number(second) > Number(first), 'the next page continues after the first', first + ' -> ' + second);
      await page.click('#trials-prev');
    }
    await page.selectOption('#trial-state', '');
    const dl = page.waitForEvent('download');
    await page.click('#download-csv');
    const download = await dl;
    const csv = fs.readFileSync(await download.path(), 'utf8').trim().split('\n');
    check(csv[0].startsWith('trial_id,state,budget,value'), 'the CSV download has the header', csv[0]);
    check(csv.length - 1 === hb.trials.total, 'the CSV download has a row per trial', (csv.length - 1) + ' of ' + hb.trials.total);
    await page.screenshot({ path: path.join(shotDir, 'study.png'), fullPage: true });
    check(await page.$eval('#trials th.attrs-col', (th) => th.hidden), 'no user_attrs column while no trial has user_attrs');

    // ---- explain: parallel coordinates and parameter importance ----
    // What the page should draw, computed here from the API: completed
    // trials, one line per configuration at its largest budget.
    const done = [];
    for (let after = 0; after !== null;) {
      const r = await api('GET', '/v1/studies/' + hb.id + '/trials?state=completed&limit=1000&after=' + after, alice);
      done.push(...r.trials);
      after = r.next_after;
    }
    const finals = new Map();
    for (const t of done) {
      if (typeof t.value !== 'number') continue;
      const o = finals.get(t.config_id);
      if (!o || t.budget > o.budget || (t.budget === o.budget && t.id > o.id)) finals.set(t.config_id, t);
    }
    const bestFinal = [...finals.values()].reduce((b, t) => (!b || t.value < b.value || (t.value === b.value && t.id < b.id) ? t : b), null);
    const hbStudy = await api('GET', '/v1/studies/' + hb.id, alice);
    const multiBudget = new Set([...finals.values()].map((t) => t.budget)).size > 1;
    await page.click('#explain-link');
    await page.waitForSelector('#view[data-loaded="explain-' + hb.id + '"]', { timeout: 20000 });
    check(page.url().endsWith('#/study/' + hb.id + '/explain'), 'the explain view has its own URL', page.url());
    const pc = await page.evaluate(() => {
      const lines = [...document.querySelectorAll('#parallel polyline.pc-line')];
      return {
        lines: lines.length,
        trials: lines.map((l) => Number(l.dataset.trial)).sort((a, b) => a - b),
        best: lines.filter((l) => l.classList.contains('pc-best')).map((l) => Number(l.dataset.trial)),
        colours: new Set(lines.map((l) => l.getAttribute('stroke'))).size,
        axes: [...document.querySelectorAll('#parallel .pc-axis')].map((a) => [a.dataset.axis, a.dataset.kind]),
        ticks: [...document.querySelectorAll('#parallel .pc-axis[data-axis="loss"] text.pc-tick')].map((t) => t.textContent),
        points: lines.every((l) => l.points.length === document.querySelectorAll('#parallel .pc-axis').length),
      };
    });
    const wantIds = [...finals.keys()].map((k) => finals.get(k).id).sort((a, b) => a - b);
    check(pc.lines === finals.size && pc.lines > 5, 'parallel coordinates: one polyline per configuration at its largest budget', pc.lines + ' lines, want ' + finals.size + ' (from ' + done.length + ' completed trials)');
    check(JSON.stringify(pc.trials) === JSON.stringify(wantIds), 'parallel coordinates: the lines are those trials', JSON.stringify(pc.trials.slice(0, 10)));
    check(pc.points, 'parallel coordinates: each line crosses every axis');
    const wantAxes = hbStudy.parameters.map((p) => [p.name, p.type === 'categorical' ? 'categorical' : p.log ? 'log' : 'linear']);
    check(JSON.stringify(pc.axes.slice(0, wantAxes.length)) === JSON.stringify(wantAxes), 'parallel coordinates: an axis per parameter, log for log parameters, categorical ones by choice', JSON.stringify(pc.axes));
    check(pc.axes[pc.axes.length - 1][0] === 'val_error' && (!multiBudget || pc.axes[pc.axes.length - 2][0] === 'epochs'), 'parallel coordinates: the budget axis, then the objective last', JSON.stringify(pc.axes));
    check(JSON.stringify(pc.ticks) === '["hinge","log_loss","modified_huber"]', 'parallel coordinates: a categorical axis has a tick per choice', JSON.stringify(pc.ticks));
    check(pc.best.length === 1 && pc.best[0] === bestFinal.id, 'parallel coordinates: the best configuration is highlighted', JSON.stringify(pc.best) + ' want ' + bestFinal.id);
    check(pc.colours > 3, 'parallel coordinates: lines are coloured by value', pc.colours);
    const bars = () => page.$$eval('#importance .imp-row', (rs) => rs.map((r) => ({ name: r.dataset.param, imp: Number(r.dataset.importance), share: Number(r.dataset.share), w: r.querySelector('.imp-bar').getBoundingClientRect().width })));
    const imp = await bars();
    check(imp.length === hbStudy.parameters.length + (multiBudget ? 1 : 0), 'importance: a bar per parameter (and the budget)', JSON.stringify(imp.map((b) => b.name)));
    check(imp.every((b, i) => i === 0 || imp[i - 1].imp >= b.imp), 'importance: bars sorted, largest first', JSON.stringify(imp.map((b) => [b.name, b.imp])));
    const shareSum = imp.reduce((a, b) => a + b.share, 0);
    check(Math.abs(shareSum - 1) < 1e-9 && imp[0].w > imp[imp.length - 1].w && imp[0].w > 20, 'importance: shares sum to 1 and the bars are drawn to them', shareSum + ' ' + JSON.stringify(imp.map((b) => b.w)));
    const impNote = await page.textContent('#importance-note');
    check(/random forest \(\d+ trees, seed 1\)/.test(impNote) && /Out-of-bag R² -?\d/.test(impNote), 'importance: the note names the method, seed and OOB R²', impNote);
    await page.locator('#parallel-panel').screenshot({ path: path.join(shotDir, 'parallel.png') });
    await page.locator('#importance-panel').screenshot({ path: path.join(shotDir, 'importance.png') });
    await page.selectOption('#axis-order', 'importance');
    const firstParam = imp.find((b) => hbStudy.parameters.some((p) => p.name === b.name)).name;
    const firstAxis = await page.$eval('#parallel .pc-axis', (a) => a.dataset.axis);
    check(firstAxis === firstParam, 'parallel coordinates: axes can be ordered by importance', firstAxis + ' vs ' + firstParam);
    await page.click('#explain-reload');
    await page.waitForSelector('#view[data-loaded="explain-' + hb.id + '"]');
    const imp2 = await bars();
    check(JSON.stringify(imp2.map((b) => [b.name, b.imp])) === JSON.stringify(imp.map((b) => [b.name, b.imp])), 'importance: the same trials give the same bars (seeded)');

    // ---- comparing studies: ticked in the list, then by URL ----
    await page.goto(base + '/ui/#/studies');
    await page.waitForSelector('#studies tr[data-study="' + asha.id + '"] input.pick');
    check(await page.$eval('#compare', (b) => b.disabled), 'compare is disabled until two studies are ticked');
    await page.check('#studies tr[data-study="' + hb.id + '"] input.pick');
    await page.check('#studies tr[data-study="' + asha.id + '"] input.pick');
    await page.click('#compare');
    await page.waitForSelector('#view[data-loaded="compare"]');
    check(page.url().endsWith('#/compare/' + hb.id + ',' + asha.id), 'compare opens #/compare/<ids>', page.url());
    await page.waitForTimeout(300);
    const cmp = await page.evaluate(() => {
      const u = window.bdDash.charts.compare;
      return { series: u.data.length - 1, points: u.data.slice(1).map((ys) => ys.filter((v) => v !== null).length), label: u.axes[0].label };
    });
    const cmpState = await page.evaluate(chartState, 'compare');
    check(cmp.series === 2 && cmp.points.every((n) => n >= 2), 'compare: one series per study, each with points', JSON.stringify(cmp));
    check(/epochs spent/.test(cmp.label), 'compare: against the resource spent', cmp.label);
    check(cmpState && cmpState.coloured > 50, 'compare: the chart drew coloured pixels', JSON.stringify(cmpState));
    const legend = await page.$$eval('#compare-legend .key-item', (ks) => ks.map((k) => k.textContent));
    check(legend.length === 2 && legend[0] === hb.name && legend[1] === asha.name, 'compare: the legend names both studies', JSON.stringify(legend));
    await page.screenshot({ path: path.join(shotDir, 'compare.png'), fullPage: true });
    await page.selectOption('#compare-axis', 'time');
    const cmpTime = await page.evaluate(() => window.bdDash.charts.compare.axes[0].label);
    check(/seconds/.test(cmpTime), 'compare: against time', cmpTime);
    await page.goto(base + '/ui/#/compare/' + hb.id + ',' + secret.id + ',' + hostile.id);
    await page.waitForSelector('#view[data-loaded="compare"]');
    const mixed = await page.evaluate(() => ({ series: window.bdDash.charts.compare.data.length - 1, text: document.getElementById('view').textContent }));
    check(mixed.series === 2 && !mixed.text.includes('bob-secret-study') && /no such study/.test(mixed.text), 'compare by URL: bob\'s study is refused, alice\'s drawn', JSON.stringify(mixed).slice(0, 300));
    check((await page.$$('#view img')).length === 0, 'compare: the hostile name made no <img> element');

    // ---- the hostile study, and live refresh ----
    await page.goto(base + '/ui/#/study/' + hostile.id);
    await page.waitForSelector('#view[data-loaded="' + hostile.id + '"]');
    check((await page.textContent('#view h1')) === HOSTILE, 'the hostile name is the study page\'s title, as text');
    check((await page.$$('#view img')).length === 0, 'no <img> element on the hostile study\'s page');
    const t = (await api('POST', '/v1/studies/' + hostile.id + '/suggest', alice, { worker: 'late', count: 1 })).trials[0];
    await api('POST', '/v1/trials/' + t.id + '/measurements', alice, { step: 1, value: 0.25 });
    await page.waitForFunction(() => /^5 total/.test(document.querySelector('dd[data-fact="trials"]').textContent), null, { timeout: 10000 });
    await page.waitForSelector('#trials tr[data-trial="' + t.id + '"]', { timeout: 10000 });
    check(true, 'a new trial appears without reloading (live refresh)');
    const bobPage = await page.goto(base + '/ui/#/study/' + secret.id).then(() => page.waitForSelector('#view .error')).then((e) => e.textContent());
    check(/No study/.test(bobPage), 'bob\'s study id shows not-found to alice', bobPage);
    // ---- paused, metadata, user_attrs (fields of newer daemons) ----
    // The page shows them when the JSON has them; these answers are the
    // daemon's own with the fields added (hostile text in keys and values),
    // so the test does not depend on a daemon that already has them.
    const addFields = async (route) => {
      const r = await route.fetch();
      const body = await r.json();
      if (Array.isArray(body.trials)) body.trials.forEach((t, i) => {
        if (i % 2 === 0) t.user_attrs = { [HOSTILE]: HOSTILE, note: 'seed ' + i, nested: { a: [1, 2] } };
      });
      else Object.assign(body, { paused: true, metadata: { owner: 'alice', [HOSTILE]: HOSTILE, tags: ['x', 'y'] } });
      await route.fulfill({ response: r, json: body });
    };
    const studyRe = new RegExp('/v1/studies/' + hostile.id + '(/trials)?(\\?.*)?$');
    const listRe = /\/v1\/studies(\?.*)?$/;
    const pauseInList = async (route) => {
      const r = await route.fetch();
      const body = await r.json();
      for (const st of body.studies || []) if (st.id === hostile.id) st.paused = true;
      await route.fulfill({ response: r, json: body });
    };
    await page.route(studyRe, addFields);
    await page.route(listRe, pauseInList);
    await page.goto(base + '/ui/#/studies');
    await page.waitForSelector('#studies tr[data-study="' + hostile.id + '"]');
    const pausedRows = await page.$$eval('#studies tr[data-study]', (trs) => trs.filter((tr) => tr.querySelector('.pill.paused')).map((tr) => Number(tr.dataset.study)));
    check(JSON.stringify(pausedRows) === JSON.stringify([hostile.id]), 'the studies list marks a paused study (only it)', JSON.stringify(pausedRows));
    await page.unroute(listRe, pauseInList);
    await page.goto(base + '/ui/#/study/' + hostile.id);
    await page.waitForSelector('#view[data-loaded="' + hostile.id + '"]');
    await page.waitForSelector('#trials tbody td.attrs-cell dl');
    const extra = await page.evaluate(() => ({
      paused: document.querySelector('dd[data-fact="paused"]').textContent,
      meta: [...document.querySelectorAll('dd[data-fact="metadata"] dt, dd[data-fact="metadata"] dd')].map((e) => e.textContent),
      attrsHead: !document.querySelector('#trials th.attrs-col').hidden,
      attrs: [...document.querySelectorAll('#trials td.attrs-cell dl')].map((d) => d.textContent),
      imgs: document.querySelectorAll('#view img').length,
    }));
    check(/^yes/.test(extra.paused), 'a paused study says so', extra.paused);
    check(JSON.stringify(extra.meta) === JSON.stringify(['owner', 'alice', HOSTILE, HOSTILE, 'tags', '["x","y"]']), 'study metadata is listed as text', JSON.stringify(extra.meta));
    check(extra.attrsHead && extra.attrs.length >= 2 && extra.attrs.every((a) => a.includes(HOSTILE) && a.includes('{"a":[1,2]}')), 'trial user_attrs are shown as text', JSON.stringify(extra.attrs).slice(0, 300));
    check(extra.imgs === 0, 'hostile metadata and user_attrs made no <img> element');
    await page.unroute(studyRe, addFields);

    // ---- the other schedulers' views ----
    const views = {
      rising_bandits: async () => {
        const arms = await page.$$eval('#scheduler table.arms tbody tr', (trs) => trs.map((tr) => tr.textContent));
        check(arms.length === 3 && arms.some((a) => a.includes('alive')), 'rising_bandits: one row per arm with its status', JSON.stringify(arms));
        check((await page.$$('#scheduler .bound')).length === 3, 'rising_bandits: each arm\'s bounds are drawn');
      },
      spc: async () => {
        const heads = await page.$$eval('#scheduler th', (ths) => ths.map((th) => th.textContent));
        const rows = await page.$$('#scheduler table tbody tr');
        check(heads.includes('cap') && heads.includes('LCB') && rows.length > 0, 'spc: testers with caps and LCBs', JSON.stringify(heads));
      },
      bo_bos: async () => {
        const text = await page.textContent('#scheduler');
        check(/Bayesian optimal stopping: triggered \d+, stopped \d+/.test(text), 'bo_bos: the stopping summary and verdicts', text.slice(0, 200));
      },
      asha: async () => {
        check((await page.$$('#scheduler .bracket tbody tr')).length > 0, 'asha: brackets with their rungs');
      },
    };
    for (const [name, def] of Object.entries(OTHER_SCHEDULERS)) {
      const st = await driveStudy(alice, 'view-' + name, def, 25);
      await page.goto(base + '/ui/#/study/' + st.id);
      await page.waitForFunction((n) => {
        const s = document.querySelector('#scheduler .sched');
        return s && s.dataset.scheduler === n.name && document.getElementById('view').dataset.loaded === String(n.id);
      }, { name, id: st.id });
      await views[name]();
    }
    // ---- several objectives: the Pareto plot, infeasible trials apart ----
    const mo2 = await moStudy(alice, 'pareto-2', [{ metric: 'error', goal: 'minimize' }, { metric: 'latency_ms', goal: 'minimize' }],
      [{ metric: 'memory_mb', max: 512 }], 30);
    const mo2Doc = await api('GET', '/v1/studies/' + mo2.id, alice);
    const mo2Trials = (await api('GET', '/v1/studies/' + mo2.id + '/trials?limit=1000', alice)).trials;
    const infeasibleIds = mo2Trials.filter((t) => t.state === 'completed' && t.feasible === false && t.value !== null).map((t) => t.id).sort((a, b) => a - b);
    const frontIds = (mo2Doc.pareto_front || []).map((p) => p.trial_id).sort((a, b) => a - b);
    check(frontIds.length > 0 && infeasibleIds.length >= 5 && infeasibleIds.length <= 25, 'the two-objective study has a front and infeasible trials', JSON.stringify({ front: frontIds.length, infeasible: infeasibleIds.length }));
    check((mo2Doc.pareto_front || []).every((p) => p.values.memory_mb <= 512), 'no infeasible trial is on the API\'s front', JSON.stringify(mo2Doc.pareto_front));
    await page.goto(base + '/ui/#/study/' + mo2.id);
    await page.waitForSelector('#view[data-loaded="' + mo2.id + '"]');
    await page.waitForTimeout(300);
    const par = await page.evaluate(() => window.bdDash.pareto);
    check(par && JSON.stringify(par.objectives) === '["error","latency_ms"]' && JSON.stringify(par.pairs) === '["pareto_0_1"]', 'pareto: one plot for two objectives', JSON.stringify(par));
    check(par && JSON.stringify([...par.front].sort((a, b) => a - b)) === JSON.stringify(frontIds), 'pareto: the front drawn is the API\'s', JSON.stringify(par && par.front) + ' want ' + JSON.stringify(frontIds));
    check(par && JSON.stringify([...par.infeasible].sort((a, b) => a - b)) === JSON.stringify(infeasibleIds), 'pareto: the infeasible trials are a series of their own', JSON.stringify(par && par.infeasible) + ' want ' + JSON.stringify(infeasibleIds));
    check(par && par.front.every((id) => !infeasibleIds.includes(id)) && par.diverged === 1, 'pareto: no infeasible trial on the front; the diverged one has no point', JSON.stringify(par));
    const p2 = await page.evaluate(() => {
      const u = window.bdDash.charts.pareto_0_1;
      const n = (s) => u.data[s].filter((v) => v !== null).length;
      const xs = u.data[0];
      return { feasible: n(1), infeasible: n(2), front: n(3), sorted: xs.every((x, i) => i === 0 || xs[i - 1] <= x), x: u.axes[0].label, y: u.axes[1].label };
    });
    check(p2.infeasible === infeasibleIds.length && p2.front === frontIds.length && p2.feasible + p2.infeasible + p2.front === 29 && p2.sorted,
      'pareto: every completed trial is a point, in its series', JSON.stringify(p2));
    check(p2.x === 'error (min)' && p2.y === 'latency_ms (min)', 'pareto: the axes name the objectives and goals', JSON.stringify(p2));
    const p2State = await page.evaluate(chartState, 'pareto_0_1');
    check(p2State && p2State.coloured > 50, 'pareto: the plot drew coloured pixels', JSON.stringify(p2State));
    const moFacts = await page.evaluate(() => ({ obj: document.querySelector('dd[data-fact="objectives"]').textContent, front: document.querySelector('dd[data-fact="pareto_front"]').textContent, cons: document.querySelector('dd[data-fact="constraints"]').textContent }));
    check(moFacts.obj === 'minimize error · minimize latency_ms' && moFacts.front.startsWith(frontIds.length + ' trials') && /hypervolume \d/.test(moFacts.front) && moFacts.cons === 'memory_mb ≤ 512',
      'a study with several objectives lists them, its front and hypervolume, and its constraints', JSON.stringify(moFacts));
    const marked = await page.$$eval('#trials tbody tr[data-trial]', (trs) => trs.filter((tr) => tr.querySelector('td .infeasible')).map((tr) => Number(tr.dataset.trial)).sort((a, b) => a - b));
    const infeasibleAll = mo2Trials.filter((t) => t.feasible === false).map((t) => t.id).sort((a, b) => a - b); // the diverged one too
    check(JSON.stringify(marked) === JSON.stringify(infeasibleAll), 'the trial table marks the infeasible trials', JSON.stringify(marked));
    const hv = await page.evaluate(chartState, 'best_time');
    check(hv && hv.points > 0, 'the hypervolume over time is drawn', JSON.stringify(hv));
    await page.locator('#pareto-panel').screenshot({ path: path.join(shotDir, 'pareto.png') });
    await page.goto(base + '/ui/#/studies');
    await page.waitForSelector('#studies tr[data-study="' + mo2.id + '"]');
    const moRow = await page.$eval('#studies tr[data-study="' + mo2.id + '"]', (tr) => tr.textContent);
    check(moRow.includes('HV ' + Number(mo2Doc.hypervolume.toPrecision(4))), 'the studies list shows a multi-objective study\'s hypervolume', moRow);
    const mo3 = await moStudy(alice, 'pareto-3', [{ metric: 'error', goal: 'minimize' }, { metric: 'latency_ms', goal: 'minimize' }, { metric: 'energy', goal: 'maximize' }], [], 20);
    await page.goto(base + '/ui/#/study/' + mo3.id);
    await page.waitForSelector('#view[data-loaded="' + mo3.id + '"]');
    await page.waitForTimeout(300);
    const par3 = await page.evaluate(() => window.bdDash.pareto);
    check(par3 && JSON.stringify(par3.pairs) === '["pareto_0_1","pareto_0_2","pareto_1_2"]', 'pareto: three objectives make a matrix of their three pairs', JSON.stringify(par3));
    const mo3Front = ((await api('GET', '/v1/studies/' + mo3.id, alice)).pareto_front || []).length;
    for (const name of (par3 ? par3.pairs : [])) {
      const st = await page.evaluate(chartState, name);
      check(st && st.points === 19 && st.coloured > 50, 'pareto matrix: ' + name + ' shows every completed trial', JSON.stringify(st));
    }
    check(par3 && par3.front.length === mo3Front && par3.infeasible.length === 0, 'pareto matrix: the whole front, nothing infeasible', JSON.stringify(par3));
    await page.locator('#pareto-panel').screenshot({ path: path.join(shotDir, 'pareto3.png') });
    check((await page.$$('#view img')).length === 0, 'the Pareto views made no <img> element');

    check(dialogs.length === 0, 'no dialog fired', JSON.stringify(dialogs));

    // ---- a refused token, then logout ----
    await page.evaluate(() => sessionStorage.setItem('banditd.token', 'bdt_not_a_token'));
    await page.goto(base + '/ui/#/studies');
    await page.waitForSelector('#login #token');
    check((await page.evaluate(() => sessionStorage.getItem('banditd.token'))) === null, 'a 401 forgets the token and shows the login form');
    await page.fill('#token', alice);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#logout:not([hidden])');
    await page.click('#logout');
    await page.waitForSelector('#login #token');
    check((await page.evaluate(() => sessionStorage.length)) === 0, 'logout clears sessionStorage');
    check(urls.every((u) => !u.includes(alice)), 'the token never appears in a URL');

    // ---- 100,000 trials ----
    if (big) {
      const code = await finish(big, 150000);
      check(code === 0, 'bd_loadgen filled the big study', 'exit ' + code + '\n' + tail('loadgen.log'));
      const bigStudy = (await api('GET', '/v1/studies?limit=1000', alice)).studies.find((s) => s.name.startsWith('loadgen-'));
      check(bigStudy && bigStudy.trials.total === BIG_TRIALS, 'the big study holds ' + BIG_TRIALS + ' trials', JSON.stringify(bigStudy && bigStudy.trials));
      await page.fill('#token', alice);
      await page.click('#login button[type=submit]');
      await page.waitForSelector('#studies tbody tr[data-study]');
      bytes = 0;
      await page.goto(base + '/ui/#/study/' + bigStudy.id);
      await page.waitForSelector('#view[data-loaded="' + bigStudy.id + '"]', { timeout: 30000 });
      await page.waitForTimeout(7000); // two refreshes
      const shown = await page.textContent('dd[data-fact="trials"]');
      check(shown.startsWith(BIG_TRIALS + ' total'), 'the page shows the big study\'s total', shown);
      const rowsBig = await page.$$('#trials tbody tr[data-trial]');
      check(rowsBig.length > 0, 'the big study\'s trial table has rows', rowsBig.length);
      const sc = await page.evaluate(chartState, 'scatter');
      check(sc && sc.points > 0 && sc.points <= 300, 'the scatter holds a bounded set of trials', JSON.stringify(sc));
      check(bytes > 0 && bytes < BYTES_BOUND, 'the page fetched less than 5 MB for 100,000 trials', bytes + ' bytes');
      console.log('     (the 100,000-trial study page fetched ' + bytes + ' bytes including two refreshes)');
    }
    check(pageErrors.length === 0, 'no uncaught error in the page', JSON.stringify(pageErrors));
  } catch (e) {
    await page.screenshot({ path: path.join(tmp, 'failure.png'), fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await ctx.close();
  }
  daemon.kill('SIGINT');
  await finish(daemon, 10000);
}

let fatal = null;
try {
  await main();
} catch (e) {
  fatal = e;
  failed++;
  console.log('FAIL ' + (e && e.stack ? e.stack : e));
  console.log('daemon log:\n' + tail('daemon.log') + '\nworker log:\n' + tail('worker.log'));
} finally {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
if (!failed && !process.env.BD_KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
else console.log('kept ' + tmp);
console.log(passed + ' passed, ' + failed + ' failed');
process.exit(failed || fatal ? 1 : 0);
