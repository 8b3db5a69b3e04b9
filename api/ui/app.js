// app.js: the dashboard's entry point: login, logout and hash routing
// (#/studies, #/study/12, #/study/12/explain, #/compare/3,7). Each view
// returns a stop() that cancels its polling and requests, called before
// the next view is drawn.
import { token, setToken, clearToken, getJson, ApiError } from './api.js';
import { el, clear } from './dom.js';
import { studiesView } from './studies.js';
import { studyView } from './study.js';
import { explainView } from './explain.js';
import { compareView, MAX_STUDIES } from './compare.js';

const view = document.getElementById('view');
const who = document.getElementById('who');
const logoutButton = document.getElementById('logout');
let stopView = null;
let loginNote = '';

function stopCurrent() {
  if (stopView) stopView();
  stopView = null;
}

function loginView() {
  stopCurrent();
  logoutButton.hidden = true;
  who.textContent = '';
  const input = el('input', { id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', placeholder: 'bdt_…', required: true });
  const msg = el('p', { id: 'login-error', class: 'error', role: 'alert', text: loginNote });
  const form = el('form', { id: 'login', class: 'login' },
    el('h1', { text: 'Sign in' }),
    el('p', { class: 'muted', text: 'Paste an API token (the admin token is in <db>.admin-token). It is kept in this tab only and sent as an Authorization header.' }),
    el('label', { for: 'token', text: 'Token' }), input,
    el('button', { type: 'submit', text: 'Sign in' }), msg);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    setToken(t);
    try {
      await getJson('/v1/me');
      loginNote = '';
      if (!location.hash || location.hash === '#/login') location.hash = '#/studies';
      else route();
    } catch (e) {
      clearToken();
      msg.textContent = e instanceof ApiError && e.status === 401 ? 'This token is not valid.' : 'Cannot sign in: ' + e.message;
    }
  });
  clear(view).append(form);
  input.focus();
}

async function showUser() {
  try {
    const me = await getJson('/v1/me');
    who.textContent = me.name + (me.admin ? ' (admin)' : '');
  } catch (e) {
    who.textContent = '';
  }
}

function route() {
  if (!token()) {
    loginView();
    return;
  }
  stopCurrent();
  logoutButton.hidden = false;
  if (!who.textContent) showUser();
  const h = location.hash;
  const m = /^#\/study\/([1-9][0-9]{0,15})(\/explain)?$/.exec(h);
  // Ids are digits only, at most MAX_STUDIES of them: the hash is typed by anyone.
  const c = new RegExp('^#/compare/([1-9][0-9]{0,15}(?:,[1-9][0-9]{0,15}){1,' + (MAX_STUDIES - 1) + '})$').exec(h);
  if (m && m[2]) stopView = explainView(view, Number(m[1]));
  else if (m) stopView = studyView(view, Number(m[1]));
  else if (c) stopView = compareView(view, c[1].split(',').map(Number));
  else stopView = studiesView(view);
}

logoutButton.addEventListener('click', () => {
  clearToken();
  loginNote = 'Signed out.';
  location.hash = '#/studies';
  loginView();
});

window.addEventListener('bd-unauthorized', () => {
  if (document.getElementById('login')) return;
  loginNote = 'Your session ended (the token was refused); sign in again.';
  loginView();
});
window.addEventListener('hashchange', route);
route();
