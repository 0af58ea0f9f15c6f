// The one way untrusted agent text becomes HTML: Markdown, then DOMPurify.
import { marked } from '/console/vendor/marked.esm.js';
import DOMPurify from '/console/vendor/purify.es.mjs';

let allowRemoteImages = false;

// Raw HTML in agent text is shown as text, never parsed: DOMPurify would
// remove what is dangerous anyway, but parsing it at all makes the browser
// report each inline handler (onerror=…) as a refused policy.
const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
marked.use({ renderer: { html(token) { return escapeHTML(token.text); } } });
export function setAllowRemoteImages(v) { allowRemoteImages = v === true; }

function localImage(src) {
  if (/^data:/i.test(src)) return true;
  try { return new URL(src, location.href).origin === location.origin; } catch { return false; }
}

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer nofollow');
    node.setAttribute('target', '_blank');
  } else if (node.nodeName === 'IMG' && !allowRemoteImages && !localImage(node.getAttribute('src') || '')) {
    const alt = node.getAttribute('alt') || '';
    node.replaceWith(node.ownerDocument.createTextNode(`[image: ${alt}] (remote image not loaded)`));
  }
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
  FORBID_ATTR: ['style'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|\/(?![/\\]))/i, // '/…' but not '//host'
};

export function renderMarkdown(text) {
  const html = marked.parse(String(text ?? ''), { gfm: true, breaks: true, async: false });
  return DOMPurify.sanitize(html, PURIFY);
}

// setMarkdown puts sanitized Markdown into an element.
export function setMarkdown(elem, text) {
  elem.innerHTML = renderMarkdown(text);
}
