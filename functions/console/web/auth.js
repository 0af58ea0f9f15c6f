// Sign-in: OpenID Connect authorization code with PKCE (S256), or an API key.
import { getConfig, setCredential, showError, tokenClaims } from './api.js';

const FLOW_KEY = 'conclave.oidc';

function b64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
const randomString = (n = 32) => b64url(crypto.getRandomValues(new Uint8Array(n)));
// /console, not /console/: the HTTP API's routes are GET /console and
// /console/{file}, and a deployed gateway does not fold a trailing slash.
const redirectURI = () => `${location.origin}/console`;

async function discovery(issuer) {
  const res = await fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`, { cache: 'no-store' });
  if (!res.ok) throw new Error(`The identity provider's discovery document answered ${res.status}`);
  return res.json();
}

export async function startOIDC() {
  const { oidc } = getConfig();
  const disco = await discovery(oidc.issuer);
  const verifier = randomString(48); // 64 characters
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = randomString(24);
  const nonce = randomString(24);
  sessionStorage.setItem(FLOW_KEY, JSON.stringify({ verifier, state, nonce, hash: location.hash }));
  const q = new URLSearchParams({
    response_type: 'code', client_id: oidc.client_id, redirect_uri: redirectURI(), state,
    code_challenge: challenge, code_challenge_method: 'S256', nonce, scope: 'openid',
  });
  location.assign(`${disco.authorization_endpoint}?${q}`);
}

// finishOIDC completes a redirect back (?code=&state= or ?error=); true when the URL was one.
// takeRedirect reads a redirect's parameters and drops them from the
// address at once (before anything else runs): the code is never kept there.
let redirect = null;
export function takeRedirect() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return false;
  let flow = null;
  try { flow = JSON.parse(sessionStorage.getItem(FLOW_KEY) || 'null'); } catch { /* none */ }
  sessionStorage.removeItem(FLOW_KEY);
  redirect = { q, flow };
  history.replaceState(null, '', `/console${(flow && flow.hash) || location.hash || ''}`);
  return true;
}

export async function finishOIDC() {
  if (!redirect) return false;
  const { q, flow } = redirect;
  redirect = null;
  const { oidc } = getConfig();
  try {
    if (q.has('error')) throw new Error(`Sign-in failed: ${q.get('error')}`);
    if (!oidc) throw new Error('Sign-in with an identity provider is not configured.');
    if (!flow || !flow.state || q.get('state') !== flow.state) throw new Error('Sign-in failed: the state did not match. Try again.');
    const disco = await discovery(oidc.issuer);
    const res = await fetch(disco.token_endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code', code: q.get('code'), redirect_uri: redirectURI(),
        client_id: oidc.client_id, code_verifier: flow.verifier,
      }),
      cache: 'no-store',
    });
    let body = {};
    try { body = await res.json(); } catch { /* not JSON */ }
    if (!res.ok || typeof body.id_token !== 'string') throw new Error(`Sign-in failed: ${body.error || `the token endpoint answered ${res.status}`}`);
    const claims = tokenClaims(body.id_token);
    if (claims.nonce !== flow.nonce) throw new Error('Sign-in failed: the nonce did not match.');
    setCredential('bearer', body.id_token);
  } catch (err) {
    showError(err.message);
  }
  return true;
}

export function whoami(c) {
  if (!c) return '';
  if (c.kind === 'key') return 'API key';
  const claims = tokenClaims(c.value);
  return String(claims.preferred_username || claims.sub || 'unknown user');
}
