// Loaded as a classic script in <head>, before the first paint, so a
// stored theme applies without a flash of the other one. (The CSP allows
// scripts from 'self' only, so this cannot be inline.) app.js owns the
// toggle; without a stored choice the CSS follows prefers-color-scheme.
try {
  var t = localStorage.getItem('atelier-theme');
  if (t === 'dark' || t === 'light') document.documentElement.dataset.theme = t;
} catch (e) {
  // Storage may be disabled; the system theme applies.
}
