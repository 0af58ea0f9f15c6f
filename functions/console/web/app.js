// Entry: configuration, sign-in, and the hash routes.
import { setConfig, getCredential, setCredential, clearCredential, onUnauthorized, tokenExpired, showError, clearError } from './api.js';
import { startOIDC, finishOIDC, takeRedirect, whoami } from './auth.js';
import { setAllowRemoteImages } from './markdown.js';
import * as chat from './chat.js';
import * as approvals from './approvals.js';
import * as work from './work.js';
import * as team from './team.js';

const $ = (id) => document.getElementById(id);
const pages = { chat, approvals, work, team };
let current = null;

function showSignin(message = '') {
  leave();
  for (const p of Object.values(pages)) p.reset(); // nothing of the last person's stays
  $('signin').hidden = false;
  $('signin-message').textContent = message;
  $('nav').hidden = true;
  $('who').hidden = true;
  for (const id of ['page-chat', 'page-approvals', 'page-work', 'page-team', 'page-trace']) $(id).hidden = true;
}

function signedIn() {
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('who').hidden = false;
  $('whoami').textContent = whoami(getCredential());
  route();
}

function leave() {
  if (current && pages[current] && pages[current].hide) pages[current].hide();
  current = null;
}

const decode = (s) => { try { return decodeURIComponent(s); } catch { return s; } };

function route() {
  if (!getCredential()) { showSignin(); return; }
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  let name = parts[0] || 'chat';
  if (!pages[name] && name !== 'trace') name = 'chat';
  if (name === current && name !== 'trace') { pages[name].show(parts.slice(1).map(decode)); return; }
  leave();
  for (const n of ['chat', 'approvals', 'work', 'team', 'trace']) $(`page-${n}`).hidden = n !== name;
  for (const a of $('nav').querySelectorAll('a')) {
    if (a.getAttribute('href') === `#/${name}`) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  clearError();
  current = name;
  if (name === 'trace') { $('trace-id').textContent = decode(parts[1] || ''); return; }
  pages[name].show(parts.slice(1).map(decode));
}

async function main() {
  if (takeRedirect()) $('signin-message').textContent = 'Signing you in…';
  else if (getCredential()) $('signin').hidden = true; // no flash of the form on a reload
  let cfg;
  try {
    const res = await fetch('/console/config.json', { cache: 'no-store' });
    if (!res.ok) throw new Error(`config.json answered ${res.status}`);
    cfg = await res.json();
  } catch (err) {
    showError(`The console could not load its configuration: ${err.message}`);
    return;
  }
  setConfig({ stream_url: String(cfg.stream_url || ''), oidc: cfg.oidc && cfg.oidc.issuer ? cfg.oidc : null, allow_remote_images: cfg.allow_remote_images === true });
  setAllowRemoteImages(cfg.allow_remote_images === true);
  $('oidc-box').hidden = !cfg.oidc;

  onUnauthorized((msg) => { clearCredential(); showSignin(msg); });

  $('signin-oidc').addEventListener('click', () => {
    clearError();
    startOIDC().catch((err) => showError(`Sign-in could not start: ${err.message}`));
  });
  // The key is typed in a field outside any <form>: a submitted form with a
  // password field is what makes a browser offer to save it.
  const useKey = () => {
    const input = $('apikey');
    const v = input.value.trim();
    input.value = '';
    if (!v) { showError('Enter an API key.'); return; }
    clearError();
    setCredential('key', v);
    signedIn();
  };
  $('apikey-submit').addEventListener('click', useKey);
  $('apikey').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); useKey(); } });
  $('signout').addEventListener('click', () => {
    clearCredential();
    clearError();
    history.replaceState(null, '', '/console');
    showSignin('You are signed out.');
    $('apikey').focus();
  });
  window.addEventListener('hashchange', () => { if (getCredential()) route(); });

  for (const p of Object.values(pages)) p.init();

  await finishOIDC();
  if (tokenExpired()) { clearCredential(); showSignin('Your session has expired: sign in again.'); return; }
  if (getCredential()) signedIn(); else showSignin();
}

main();
