// freqctl console: the agent's JSON API in a page. No framework, no build
// step; data goes into the page as text, never as markup.
'use strict';

const HISTORY = 300; // seconds of passed/denied per second kept for the charts
const state = {
  token: null,
  policies: [],   // from /api/policies
  bans: [],       // from /api/bans
  allows: [],     // from /api/allows
  prev: null,     // the last /api/stats, for per-second rates
  hist: new Map(), // id -> {passed: [], denied: []}
  editing: null,  // the id being edited
  editingLayer: null, // and its layer, as the API shows it
  timer: null,
};

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : 'HTTP ' + status);
    this.status = status;
    this.field = body && body.field ? body.field : null;
  }
}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: 'Bearer ' + state.token } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: text }; }
  if (r.status === 401) {
    logout('The agent refused this token.');
  }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

function status(text, bad) {
  $('status').textContent = text;
  $('status').classList.toggle('bad', !!bad);
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function rate(v) {
  return v === undefined || v === null ? '–' : v < 10 ? v.toFixed(1) : Math.round(v).toString();
}

function duration(s) {
  if (s <= 0) return 'expiring';
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  if (d) return d + 'd ' + h + 'h';
  if (h) return h + 'h ' + m + 'm';
  if (m) return m + 'm ' + (s % 60) + 's';
  return s + 's';
}

/* ---- login ---- */

function logout(why) {
  clearInterval(state.timer);
  state.timer = null;
  state.token = null;
  sessionStorage.removeItem('freqctl-token');
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = why || '';
  $('token').focus();
}

async function connect(token) {
  state.token = token;
  try {
    await Promise.all([loadPolicies(), loadBans(), tick()]);
  } catch (e) {
    if (e.status !== 401) status('Cannot reach the agent: ' + e.message, true);
    if (e.status === 401) return;
  }
  sessionStorage.setItem('freqctl-token', token);
  $('login').hidden = true;
  $('app').hidden = false;
  clearInterval(state.timer);
  state.timer = setInterval(() => { tick().catch((e) => status('Refresh failed: ' + e.message, true)); }, 1000);
}

/* ---- policies ---- */

async function loadPolicies() {
  const data = await api('GET', '/api/policies');
  state.policies = data.policies;
  renderPolicies();
}

function renderPolicies() {
  const body = $('policies').tBodies[0];
  body.replaceChildren();
  for (const p of state.policies) {
    const tr = document.createElement('tr');
    tr.dataset.id = p.id;
    if (state.editing === p.id) tr.className = 'editing';
    const limits = p.rates.concat(p.warmup ? ['warm-up ' + p.warmup + ' s'] : [],
      p.concurrency ? ['at most ' + p.concurrency + ' in flight'] : [],
      p.override ? ['overrides what is more general'] : []);
    tr.append(el('td', p.id, 'num'), el('td', p.match, 'match'), el('td', limits.join(', ')),
      el('td', p.action), el('td', p.layer), el('td', p.fleet ? 'fleet' : 'node'),
      el('td', '–', 'num passed'), el('td', '–', 'num denied'),
      el('td', '–', 'num delayed'), el('td', '–', 'num inflight'));
    const chart = el('td');
    const canvas = document.createElement('canvas');
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', 'passed and denied per second, policy ' + p.id);
    chart.append(canvas);
    const actions = el('td');
    const edit = el('button', 'Edit', 'secondary');
    edit.type = 'button';
    edit.setAttribute('aria-label', 'Edit policy ' + p.id);
    edit.addEventListener('click', () => startEdit(p));
    const del = el('button', 'Delete', 'secondary danger');
    del.type = 'button';
    del.setAttribute('aria-label', 'Delete policy ' + p.id);
    del.addEventListener('click', () => confirmThen(del, () => deletePolicy(p.id)));
    actions.append(edit, ' ', del);
    tr.append(chart, actions);
    body.append(tr);
  }
  $('no-policies').hidden = state.policies.length > 0;
  drawCounters();
}

// A destructive button asks once more: the first press arms it for 5 s.
function confirmThen(button, action) {
  if (button.dataset.armed) {
    delete button.dataset.armed;
    action();
    return;
  }
  const label = button.textContent;
  button.dataset.armed = '1';
  button.textContent = 'Confirm';
  setTimeout(() => { delete button.dataset.armed; button.textContent = label; }, 5000);
}

async function deletePolicy(id) {
  try {
    await api('DELETE', '/api/policies/' + id);
    if (state.editing === id) resetPolicyForm();
    status('Policy ' + id + ' deleted.');
    await loadPolicies();
  } catch (e) {
    status(e.message, true);
  }
}

const POLICY_FIELDS = ['id', 'match', 'rates', 'burst', 'algo', 'action', 'count', 'delay_burst', 'concurrency',
  'escalate', 'ban_ttl', 'warmup'];

function clearErrors(form, ids) {
  for (const id of ids) {
    const e = $('e-' + id);
    if (e) e.textContent = '';
  }
  for (const input of form.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
}

// Shows the server's message next to the field it names ("rates[1]" -> rates).
function showError(err, prefix, general) {
  const key = err.field ? err.field.replace(/\[.*$/, '') : null;
  const input = key ? $(prefix + key) : null;
  const span = key ? $('e-' + prefix + key) || $('e-' + key) : null;
  if (input && span) {
    span.textContent = err.message;
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  } else {
    $(general).textContent = err.message;
  }
}

function numberOrText(v) {
  v = v.trim();
  if (v === '') return null;
  return /^\d+$/.test(v) ? Number(v) : v; // the server names what is wrong with anything else
}

function policyFromForm() {
  const f = (name) => $('p-' + name).value;
  return {
    id: numberOrText(f('id')),
    match: f('match').trim(),
    rates: f('rates').split(/[\s,]+/).filter((r) => r !== ''),
    burst: numberOrText(f('burst')),
    algo: f('algo'),
    action: f('action'),
    count: f('count'),
    delay_burst: numberOrText(f('delay_burst')),
    concurrency: numberOrText(f('concurrency')),
    escalate: f('escalate').trim() || null,
    ban_ttl: numberOrText(f('ban_ttl')),
    warmup: numberOrText(f('warmup')),
    override: $('p-override').checked,
    fleet: $('p-fleet').checked,
  };
}

function startEdit(p) {
  state.editing = p.id;
  state.editingLayer = p.layer; // the form has no layer: an edit keeps the policy's
  for (const name of POLICY_FIELDS) {
    const v = name === 'rates' ? p.rates.join(', ') : p[name];
    // An nginx policy counts requests, which the form's XDP/TC count does not offer.
    $('p-' + name).value = v === null || v === undefined || v === 'requests' ? (name === 'count' ? 'packets' : '') : v;
  }
  $('p-override').checked = p.override === true;
  $('p-fleet').checked = p.fleet === true;
  $('p-id').readOnly = true;
  $('policy-legend').textContent = 'Edit policy ' + p.id;
  $('policy-save').textContent = 'Save policy ' + p.id;
  $('policy-cancel').hidden = false;
  clearErrors($('policy-form'), POLICY_FIELDS.concat(['policy']));
  renderPolicies();
  $('p-match').focus();
}

function resetPolicyForm() {
  state.editing = null;
  $('policy-form').reset();
  $('p-id').readOnly = false;
  $('policy-legend').textContent = 'Add a policy';
  $('policy-save').textContent = 'Add policy';
  $('policy-cancel').hidden = true;
  clearErrors($('policy-form'), POLICY_FIELDS.concat(['policy']));
}

async function savePolicy(ev) {
  ev.preventDefault();
  const form = $('policy-form');
  clearErrors(form, POLICY_FIELDS.concat(['policy']));
  const p = policyFromForm();
  // An ip=-only policy in nginx stays there (the API keeps a layer only when told).
  if (state.editing !== null && state.editingLayer === 'nginx' && /^ip=[^,]*$/.test(p.match)) p.layer = 'http';
  try {
    const saved = state.editing !== null ? await api('PUT', '/api/policies/' + state.editing, p)
      : await api('POST', '/api/policies', p);
    status('Policy ' + saved.id + (state.editing !== null ? ' saved.' : ' added.'));
    resetPolicyForm();
    await loadPolicies();
  } catch (e) {
    if (e.status !== 401) showError(e, 'p-', 'e-policy');
  }
}

/* ---- counters ---- */

async function tick() {
  const s = await api('GET', '/api/stats');
  $('node').textContent = 'node ' + s.node + ' \u00b7 ' + s.version;
  const now = Date.now() / 1000;
  const prev = state.prev;
  const ids = new Set();
  for (const p of s.policies) {
    ids.add(p.id);
    let h = state.hist.get(p.id);
    if (!h) state.hist.set(p.id, h = { passed: [], denied: [], last: null });
    const old = prev && prev.byId.get(p.id);
    const dt = prev ? now - prev.t : 0;
    if (old && dt > 0 && p.passed >= old.passed && p.denied >= old.denied) {
      h.last = {
        passed: (p.passed - old.passed) / dt,
        denied: (p.denied - old.denied) / dt,
        delayed: (p.delayed - old.delayed) / dt,
      };
      h.passed.push(h.last.passed);
      h.denied.push(h.last.denied);
      if (h.passed.length > HISTORY) { h.passed.shift(); h.denied.shift(); }
    }
  }
  for (const id of state.hist.keys()) if (!ids.has(id)) state.hist.delete(id);
  state.prev = { t: now, byId: new Map(s.policies.map((p) => [p.id, p])) };
  const known = state.policies.map((p) => p.id).join(',');
  if (known !== s.policies.map((p) => p.id).join(',')) {
    await loadPolicies(); // changed elsewhere: the CLI, another operator
  } else {
    drawCounters();
  }
  renderKeys(s.keys);
  renderFleet(s.fleet);
  $('n-banned-uid').textContent = s.nginx.banned_uid;
  $('n-banned-address').textContent = s.nginx.banned_address;
  $('n-allowed').textContent = s.nginx.allowed;
  if (Math.floor(now) % 5 === 0) await loadBans();
  else renderBanTimes();
  status('Connected · updated ' + new Date().toLocaleTimeString());
}

function renderKeys(keys) {
  const body = $('keys').tBodies[0];
  body.replaceChildren(...keys.map((k) => {
    const tr = document.createElement('tr');
    // A value (the workers' bytes, escaped by the agent) goes in as text, never as markup.
    const key = el('td', k.value ? '"' + k.value.text + '"' + (k.value.cut ? '\u2026' : '') : k.key, 'mono');
    key.title = k.key;
    tr.append(key, el('td', k.policy), el('td', Math.round(k.used * 100) + '%', 'num'),
      el('td', k.passed, 'num'), el('td', k.denied, 'num'));
    return tr;
  }));
  $('no-keys').hidden = keys.length > 0;
}

/* The agent's fleet status (null: no Redis, or no agent writing it): every value goes in as text. */
function renderFleet(f) {
  $('fleet').hidden = !f;
  if (!f) return;
  const redis = f.redis || {};
  $('fleet-mode').textContent = 'This node (' + f.node + ') is in ' + f.mode + ' mode' +
    (f.reason ? ' (' + f.reason + ')' : '') + ' since ' + f.since + '; Redis ' + (redis.mode || '?') + ', ' +
    (redis.primaries || []).length + ((redis.primaries || []).length === 1 ? ' primary' : ' primaries') +
    '; round ' + f.rounds + ', last ' + f.last_sync + '.';
  $('fleet-policies').tBodies[0].replaceChildren(...(f.policies || []).map((p) => {
    const tr = document.createElement('tr');
    tr.append(el('td', p.id, 'num'), el('td', p.fleet_used, 'num'), el('td', p.limit + '/' + p.unit, 'num'),
      el('td', p.node_used, 'num'), el('td', p.credit, 'num'), el('td', p.demanding, 'num'));
    return tr;
  }));
  $('fleet-nodes').textContent = 'Nodes: ' + (f.nodes || []).map((n) => n.name + ' (' + n.weight + ', ' + n.mode +
    (n.in_set ? '' : ', not in the set') + ', heard ' + (n.age_ms / 1000).toFixed(1) + ' s ago)').join('; ');
}

function drawCounters() {
  for (const tr of $('policies').tBodies[0].rows) {
    const h = state.hist.get(Number(tr.dataset.id));
    const last = h && h.last;
    tr.querySelector('.passed').textContent = last ? rate(last.passed) : '–';
    tr.querySelector('.denied').textContent = last ? rate(last.denied) : '–';
    tr.querySelector('.delayed').textContent = last ? rate(last.delayed) : '–';
    const cur = state.prev && state.prev.byId.get(Number(tr.dataset.id));
    tr.querySelector('.inflight').textContent = cur && cur.inflight !== null && cur.inflight !== undefined
      ? cur.inflight : '–';
    drawChart(tr.querySelector('canvas'), h);
  }
}

// Passed (green) and denied (red) per second, newest at the right. The time
// axis spans the history there is, from one minute up to five.
function drawChart(canvas, h) {
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 160, hgt = canvas.clientHeight || 32, pad = 2;
  canvas.width = w * ratio;
  canvas.height = hgt * ratio;
  const g = canvas.getContext('2d');
  g.scale(ratio, ratio);
  g.clearRect(0, 0, w, hgt);
  g.strokeStyle = '#d0d7de';
  g.lineWidth = 1;
  g.beginPath(); g.moveTo(0, hgt - 0.5); g.lineTo(w, hgt - 0.5); g.stroke();
  if (!h || !h.passed.length) return;
  const span = Math.min(HISTORY, Math.max(60, h.passed.length));
  const max = Math.max(1, ...h.passed, ...h.denied);
  const x = (i, n) => w - pad - (n - 1 - i) * ((w - 2 * pad) / (span - 1));
  const y = (v) => hgt - 1 - (v / max) * (hgt - 2 * pad);
  const area = (values, color) => {
    g.beginPath();
    g.moveTo(x(0, values.length), hgt - 1);
    values.forEach((v, i) => g.lineTo(x(i, values.length), y(v)));
    g.lineTo(x(values.length - 1, values.length), hgt - 1);
    g.closePath();
    g.fillStyle = color + '33';
    g.fill();
    g.strokeStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    values.forEach((v, i) => (i ? g.lineTo : g.moveTo).call(g, x(i, values.length), y(v)));
    g.stroke();
  };
  area(h.passed, '#1a7f37');
  area(h.denied, '#cf222e');
  canvas.setAttribute('aria-label', `passed and denied per second over the last ${Math.round(span / 60)} min: ` +
    `now ${rate(h.passed[h.passed.length - 1])} passed, ${rate(h.denied[h.denied.length - 1])} denied`);
}

/* ---- bans and allow entries: a table and a form each ---- */

const LISTS = {
  bans: {
    path: '/api/bans', key: 'ban', prefix: 'b-', fields: ['ban', 'ttl'], empty: 'no-bans',
    form: 'ban-form', general: 'banform', del: 'Lift', delLabel: 'Lift the ban on ',
    added: 'Banned ', deleted: 'Lifted the ban on ',
    last: (b) => (b.set ? 'set ' + b.set : b.escalated_by_policy ? 'escalated by policy ' + b.escalated_by_policy :
      'by hand') +
      (b.allowed_by ? '; overridden by allow ' + b.allowed_by : ''),
  },
  allows: {
    path: '/api/allows', key: 'allow', prefix: 'a-', fields: ['allow', 'a-ttl', 'note'], empty: 'no-allows',
    form: 'allow-form', general: 'allowform', del: 'Delete', delLabel: 'Delete the allow entry ',
    added: 'Allowed ', deleted: 'Deleted the allow entry ',
    last: (a) => a.note || '',
  },
};

async function loadList(name) {
  const data = await api('GET', LISTS[name].path);
  const loaded = Date.now() / 1000;
  state[name] = data[name];
  for (const b of state[name]) b.until = b.ttl_remaining === null ? null : loaded + b.ttl_remaining;
  renderList(name);
}

function loadBans() {
  return Promise.all([loadList('bans'), loadList('allows')]);
}

function renderList(name) {
  const l = LISTS[name];
  const body = $(name).tBodies[0];
  body.replaceChildren();
  for (const b of state[name]) {
    const text = b[l.key];
    const tr = document.createElement('tr');
    const actions = el('td');
    /* A set's bans are lifted with their set (freqctl ban del --set NAME). */
    if (!b.set) {
      const del = el('button', l.del, 'secondary danger');
      del.type = 'button';
      del.setAttribute('aria-label', l.delLabel + text);
      del.addEventListener('click', () => confirmThen(del, () => deleteEntry(name, text)));
      actions.append(del);
    }
    tr.append(el('td', text, 'match'), el('td', b.kind), el('td', b.expires || 'never'),
      el('td', '', 'remaining'), el('td', l.last(b)), actions);
    tr.dataset[l.key] = text;
    if (b.set) tr.dataset.set = b.set;
    body.append(tr);
  }
  $(l.empty).hidden = state[name].length > 0;
  renderListTimes(name);
}

function renderListTimes(name) {
  const now = Date.now() / 1000;
  const rows = $(name).tBodies[0].rows;
  state[name].forEach((b, i) => {
    if (rows[i]) rows[i].querySelector('.remaining').textContent = b.until === null ? '–' : duration(Math.round(b.until - now));
  });
}

function renderBanTimes() {
  renderListTimes('bans');
  renderListTimes('allows');
}

async function deleteEntry(name, text) {
  try {
    await api('DELETE', LISTS[name].path + '/' + encodeURIComponent(text));
    status(LISTS[name].deleted + text + '.');
    await loadList(name);
  } catch (e) {
    status(e.message, true);
  }
}

async function addEntry(name, ev) {
  ev.preventDefault();
  const l = LISTS[name];
  const form = $(l.form);
  clearErrors(form, l.fields.concat([l.general]));
  const body = { [l.key]: $(l.prefix + l.key).value.trim(), ttl: $(l.prefix + 'ttl').value.trim() || null };
  if (name === 'allows') body.note = $('a-note').value.trim() || null;
  try {
    const r = await api('POST', l.path, body);
    status(l.added + r[l.key] + '.');
    form.reset();
    await loadBans();
  } catch (e) {
    if (e.status !== 401) showError(e, l.prefix, 'e-' + l.general);
  }
}

/* ---- start ---- */

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    connect($('token').value.trim());
  });
  $('policy-form').addEventListener('submit', savePolicy);
  $('policy-cancel').addEventListener('click', resetPolicyForm);
  $('ban-form').addEventListener('submit', (ev) => addEntry('bans', ev));
  $('allow-form').addEventListener('submit', (ev) => addEntry('allows', ev));
  // #token=... never leaves the browser; take it and drop it from the address bar.
  const m = /(?:^#|&)token=([0-9a-f]+)/.exec(location.hash);
  if (m) history.replaceState(null, '', location.pathname);
  const token = m ? m[1] : sessionStorage.getItem('freqctl-token');
  if (token) connect(token); else logout('');
});
