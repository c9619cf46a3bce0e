// The Cohort operator dashboard (docs/admin-api.md, "Dashboard"). Plain browser JS, no build step.
// It reads only the admin API's documented JSON routes with the token the operator enters (kept in
// sessionStorage). Every string from the API, member-supplied ones included (site ids, ABORT
// reasons), goes into the page as a text node: nothing is ever parsed as HTML.

const TOKEN_KEY = 'cohort.adminToken';
/** How often the panels refresh, ms. */
const REFRESH_MS = 5000;
/** How long an audit of the log stays fresh before it is run again when the log has grown, ms. */
const AUDIT_MAX_AGE_MS = 300_000;
/** Rounds and versions listed. */
const LIST_LIMIT = 50;
const SVG_NS = 'http://www.w3.org/2000/svg';
/** The audit's counts the page names, in this order (others are in the API's answer). */
const AUDIT_COUNTS = [
  ['signatures', 'signatures'],
  ['links', 'links'],
  ['commitHashes', 'commit hashes'],
  ['aggregates', 'aggregates'],
  ['recomputed', 'aggregates recomputed'],
  ['votes', 'votes'],
];

/** What a session knows; reset on sign-out. */
const fresh = () => ({ token: null, who: null, audit: null, auditAt: 0, armedRollback: null, status: null });
const state = { ...fresh(), timer: null, auditing: false, refreshing: null, again: false };

const $ = (id) => document.getElementById(id);
const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) node.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  return node;
}

/** A table cell holding `text`. */
const td = (text, attrs = {}) => el('td', attrs, text);

/** An SVG element with attributes. */
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

const short = (hash) => (typeof hash === 'string' ? hash.slice(0, 12) : '');
const time = (ms) => (ms === null || ms === undefined ? '–' : new Date(ms).toLocaleTimeString());
const seconds = (ms) => (ms === null || ms === undefined ? '–' : `${(ms / 1000).toFixed(2)} s`);
const percent = (x) => `${(100 * x).toFixed(2)}%`;
const yesNo = (b) => (b ? 'yes' : 'no');

/** Accuracy and mean loss of a round's evaluation, or null without one. */
function scores(evaluation) {
  if (evaluation === null || evaluation === undefined || evaluation.examples <= 0) return null;
  return {
    accuracy: evaluation.correct / evaluation.examples,
    loss: evaluation.lossSum / evaluation.examples,
  };
}

class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? 'HTTP';
  }
}

/** Calls the API with the token; the JSON answer, or an ApiError. */
async function api(path, options = {}) {
  const headers = { authorization: `Bearer ${state.token}` };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

function showError(err) {
  const box = $('error');
  if (err === null) {
    box.hidden = true;
    box.textContent = '';
    return;
  }
  box.hidden = false;
  box.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err?.message ?? err);
}

function setRows(table, rows) {
  byTestId(table)
    .querySelector('tbody')
    .replaceChildren(...rows);
}

// ---- panels ----

/** The circuit breaker's level, failing share and the sites it leaves out. */
function breakerText(b) {
  if (!b.enabled) return 'off';
  const share = `${(b.share * 100).toFixed(1)}% failing`;
  const out = b.level >= 1 && b.failing.length > 0 ? `, leaving out ${b.failing.join(', ')}` : '';
  return `${b.state}${b.probing ? ' (probing)' : ''} — ${share}${out}`;
}

function renderStatus(s) {
  state.status = s;
  const facts = {
    federation: s.federation,
    'status-phase': s.phase,
    'status-round': s.round,
    'status-head': short(s.head),
    'status-height': s.height,
    'status-log': s.logSequence,
    'status-sites': `${s.sites.live.length}/${s.sites.configured}`,
    'status-aggregators': `${s.aggregators.live.length}/${s.aggregators.configured}`,
    'status-run':
      s.run === null ? 'none' : `${s.run.id} ${s.run.state} (${s.run.decided}/${s.run.rounds ?? '∞'} rounds)`,
    'status-breaker': breakerText(s.breaker),
  };
  for (const [id, text] of Object.entries(facts)) byTestId(id).textContent = String(text);
  byTestId('status-head').title = s.head;
  const open = s.phase === 'collecting' || s.phase === 'voting';
  $('run-stop').hidden = s.run === null || s.run.state !== 'running';
  $('abort-form').hidden = !open;
  $('abort-form').dataset.round = String(s.round);
}

function renderRounds(rounds) {
  setRows(
    'rounds-table',
    rounds.map((r) => {
      const sc = scores(r.evaluation);
      return el(
        'tr',
        { 'data-testid': 'round-row', 'data-round': r.round, 'data-status': r.status },
        td(String(r.round)),
        td(r.status === 'open' ? 'open' : r.status.toUpperCase(), { class: `outcome ${r.status}` }),
        td(r.kind),
        td(r.status === 'commit' ? `@${r.height}` : '–'),
        td(`${r.contributors.length}/${r.participants.length}`),
        td(time(r.openedUnixMs)),
        td(seconds(r.durationMs)),
        td(sc === null ? '–' : percent(sc.accuracy)),
        td(sc === null ? '–' : sc.loss.toFixed(4)),
        td(r.reason, { class: 'reason', 'data-testid': 'round-reason' }),
      );
    }),
  );
  renderEvaluationChart(rounds);
  renderTimingChart(rounds);
}

/** Scales `v` from [lo, hi] onto [a, b]. */
const scale = (v, lo, hi, a, b) => (hi === lo ? (a + b) / 2 : a + ((v - lo) / (hi - lo)) * (b - a));

function renderEvaluationChart(rounds) {
  const host = byTestId('chart-evaluation');
  const points = rounds
    .filter((r) => r.status === 'commit' && scores(r.evaluation) !== null)
    .map((r) => ({ round: r.round, ...scores(r.evaluation) }))
    .sort((a, b) => a.round - b.round);
  if (points.length === 0) {
    host.replaceChildren(
      el('p', { class: 'muted' }, 'No federated evaluation recorded yet (it needs a data contract).'),
    );
    return;
  }
  // Width, height and the margins left, right, top, bottom.
  const [W, H, L, R, T, B] = [640, 220, 48, 56, 12, 32];
  const [r0, r1] = [points[0].round, points[points.length - 1].round];
  const maxLoss = Math.max(...points.map((p) => p.loss), 1e-9);
  const x = (round) => scale(round, r0, r1, L, W - R);
  const yAcc = (a) => scale(a, 0, 1, H - B, T);
  const yLoss = (l) => scale(l, 0, maxLoss, H - B, T);
  const chart = svg('svg', {
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'aria-label': `Accuracy and mean loss over ${points.length} rounds`,
  });
  chart.append(svg('title', {}, 'Accuracy (left axis) and mean loss (right axis) per round'));
  for (const a of [0, 0.25, 0.5, 0.75, 1]) {
    const y = yAcc(a);
    chart.append(
      svg('line', { class: 'grid', x1: L, x2: W - R, y1: y, y2: y }),
      svg('text', { class: 'axis acc', x: L - 6, y: y + 4, 'text-anchor': 'end' }, `${a * 100}%`),
      svg('text', { class: 'axis loss', x: W - R + 6, y: y + 4 }, (a * maxLoss).toPrecision(2)),
    );
  }
  for (const p of points) {
    const at = { class: 'axis', x: x(p.round), y: H - B + 16, 'text-anchor': 'middle' };
    chart.append(svg('text', at, String(p.round)));
  }
  const line = (cls, y, key) =>
    svg('polyline', {
      class: `series ${cls}`,
      points: points.map((p) => `${x(p.round)},${y(p[key])}`).join(' '),
    });
  chart.append(line('loss', yLoss, 'loss'), line('acc', yAcc, 'accuracy'));
  const dot = (cls, p, cy, title) =>
    svg(
      'circle',
      {
        class: `point ${cls}`,
        'data-testid': `${cls === 'acc' ? 'accuracy' : cls}-point`,
        cx: x(p.round),
        cy,
        r: 4,
      },
      svg('title', {}, `round ${p.round}: ${title}`),
    );
  for (const p of points) {
    chart.append(
      dot('loss', p, yLoss(p.loss), `mean loss ${p.loss.toFixed(4)}`),
      dot('acc', p, yAcc(p.accuracy), `accuracy ${percent(p.accuracy)}`),
    );
  }
  const legend = el(
    'p',
    { class: 'legend' },
    el('span', { class: 'key acc' }, 'accuracy'),
    ' ',
    el('span', { class: 'key loss' }, 'mean loss'),
  );
  host.replaceChildren(chart, legend);
}

function renderTimingChart(rounds) {
  const host = byTestId('chart-timings');
  const decided = rounds.filter((r) => r.durationMs !== null).sort((a, b) => a.round - b.round);
  if (decided.length === 0) {
    host.replaceChildren(el('p', { class: 'muted' }, 'No round decided yet.'));
    return;
  }
  const [W, ROW, L] = [640, 18, 64];
  const H = decided.length * ROW + 24;
  const budget = (r) => Math.max(0, r.deadlineUnixMs - r.openedUnixMs);
  const max = Math.max(...decided.map((r) => Math.max(r.durationMs, 1)));
  const w = (ms) => scale(Math.min(ms, max), 0, max, 0, W - L - 80);
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'Round durations' });
  decided.forEach((r, i) => {
    const y = 4 + i * ROW;
    const bar = { class: `bar ${r.status}`, 'data-testid': 'timing-bar', x: L, y, height: ROW - 4 };
    chart.append(
      svg('text', { class: 'axis', x: L - 6, y: y + 12, 'text-anchor': 'end' }, `round ${r.round}`),
      svg(
        'rect',
        { ...bar, width: Math.max(1, w(r.durationMs)) },
        svg('title', {}, `round ${r.round}: ${seconds(r.durationMs)} (${r.status})`),
      ),
      svg('text', { class: 'axis', x: L + w(r.durationMs) + 6, y: y + 12 }, seconds(r.durationMs)),
    );
    // The deadline's tick, when it falls inside the chart.
    const d = L + w(budget(r));
    if (budget(r) <= max)
      chart.append(svg('line', { class: 'deadline', x1: d, x2: d, y1: y - 1, y2: y + ROW - 3 }));
  });
  host.replaceChildren(chart);
}

function renderSites(members) {
  setRows(
    'sites-table',
    members.map((m) =>
      el(
        'tr',
        { 'data-testid': 'site-row', 'data-id': m.id, 'data-role': m.role },
        el('th', { scope: 'row' }, m.id),
        td(m.role),
        td(yesNo(m.live), { class: m.live ? 'ok' : 'bad' }),
        td(yesNo(m.excluded), { class: m.excluded ? 'bad' : '' }),
        td(yesNo(m.revoked), { class: m.revoked ? 'bad' : '' }),
        td(m.head === null ? '–' : `${short(m.head)} @${m.height}`),
        td(m.state ?? '–'),
        td(time(m.lastSeenUnixMs)),
        td(
          m.lastContribution === null
            ? '–'
            : `round ${m.lastContribution.round} (@${m.lastContribution.height})`,
        ),
      ),
    ),
  );
}

function renderTree(detail, members) {
  const root = byTestId('tree-root');
  if (detail === null) {
    byTestId('tree-round').textContent = 'No round has assigned sites yet.';
    root.replaceChildren();
    return;
  }
  byTestId('tree-round').textContent = `Assignments of round ${detail.round} (${detail.status}).`;
  const live = new Map(members.map((m) => [m.id, m.live]));
  const groups = new Map(members.filter((m) => m.role === 'aggregator').map((m) => [m.id, []]));
  for (const a of detail.assignments) {
    if (!groups.has(a.aggregator)) groups.set(a.aggregator, []);
    groups.get(a.aggregator).push(a);
  }
  const contributed = new Set(detail.contributors);
  const aggregators = [...groups.entries()].map(([agg, sites]) =>
    el(
      'li',
      { 'data-testid': 'tree-aggregator', 'data-id': agg },
      el('span', { class: `node ${live.get(agg) ? 'ok' : 'bad'}` }, agg),
      ` ${sites.length} site${sites.length === 1 ? '' : 's'}`,
      el(
        'ul',
        {},
        ...sites.map((s) =>
          el(
            'li',
            { 'data-testid': 'tree-site', 'data-id': s.site },
            el('span', { class: `node ${live.get(s.site) ? 'ok' : 'bad'}` }, s.site),
            ` ${s.examples} examples${contributed.has(s.site) ? ', summed' : ''}`,
          ),
        ),
      ),
    ),
  );
  root.replaceChildren(
    el('li', {}, el('span', { class: 'node ok' }, 'coordinator'), el('ul', {}, ...aggregators)),
  );
}

/** What the last audit says of version `v` (`a`: its round as the audit saw it). */
function auditMark(v, a) {
  const audit = state.audit;
  if (audit === null) return { ok: false, text: '–' };
  if (v.kind === 'genesis') {
    return audit.genesis === v.hash
      ? { ok: true, text: 'trusted genesis' }
      : { ok: false, text: 'not the trusted genesis' };
  }
  if (a === undefined) {
    return {
      ok: false,
      text: v.height > audit.head.height ? 'not audited yet' : 'not in the audited history',
    };
  }
  if (a.aggregate === 'problem' || audit.problems.some((p) => p.sequence === a.sequence)) {
    return { ok: false, text: 'problem' };
  }
  if (a.sequence > audit.historyThrough) return { ok: false, text: 'after a problem' };
  return { ok: true, text: a.aggregate === 'verified' ? 'verified, aggregate checked' : 'verified' };
}

function renderVersions(versions) {
  const admin = state.who?.scopes.includes('admin') === true;
  const audited = new Map();
  for (const r of state.audit?.rounds ?? []) if (r.commit !== null) audited.set(r.commit, r);
  const headHeight = Math.max(...versions.filter((v) => v.kind !== 'abort').map((v) => v.height));
  setRows(
    'versions-table',
    versions
      .filter((v) => v.kind !== 'abort')
      .map((v) => {
        const mark = auditMark(v, audited.get(v.hash));
        const cells = [
          td(`@${v.height}`),
          td(short(v.hash), { class: 'hash', title: v.hash }),
          td(String(v.round)),
          td(v.kind),
          td(time(v.unixMs)),
          td(String(v.contributors.length)),
          td(mark.text, { 'data-testid': 'version-audit', class: mark.ok ? 'ok' : '' }),
        ];
        // An admin may roll back to any commit below the head (a second click confirms).
        const armed = state.armedRollback === v.hash;
        const button = { type: 'button', 'data-testid': 'rollback-button', 'data-hash': v.hash };
        const label = armed ? `Confirm rollback to @${v.height}` : 'Roll back…';
        if (admin) cells.push(td(v.height < headHeight ? el('button', button, label) : ''));
        return el('tr', { 'data-testid': 'version-row', 'data-height': v.height }, ...cells);
      }),
  );
  for (const th of document.querySelectorAll('[data-admin-only]')) th.hidden = !admin;
}

function renderAudit() {
  const a = state.audit;
  const box = byTestId('audit-status');
  const problems = byTestId('audit-problems');
  if (a === null) return;
  box.dataset.verified = String(a.verified);
  box.className = a.verified ? 'ok' : 'bad';
  const counts = AUDIT_COUNTS.filter(([key]) => Number.isInteger(a.checked[key]))
    .map(([key, label]) => `${a.checked[key]} ${label}`)
    .join(', ');
  const what = `${a.entries} entries, head @${a.head.height} ${short(a.head.hash)}; checked: ${counts}`;
  box.textContent = a.verified
    ? `Log verified at ${time(a.startedUnixMs)}: ${what}.`
    : `Log NOT verified at ${time(a.startedUnixMs)}: ${a.problemCount} problem(s), ${a.uncheckedCount} check(s) not made; ${what}.`;
  problems.replaceChildren(
    ...a.problems.map((p) => el('li', {}, `entry ${p.sequence}: ${p.code}: ${p.message}`)),
  );
  // Checks not made are listed by kind: records of kinds this build does not know are not problems.
  const byCode = new Map();
  for (const u of a.unchecked) byCode.set(u.code, [...(byCode.get(u.code) ?? []), u.sequence]);
  const line = ([code, entries]) =>
    `${code}: ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} (${entries.join(', ')})`;
  byTestId('audit-unchecked').replaceChildren(...[...byCode].map((u) => el('li', {}, line(u))));
}

// ---- loading ----

async function latestAssignments(rounds) {
  const latest = rounds.find((r) => r.participants.length > 0);
  return latest === undefined ? null : api(`/v1/rounds/${latest.round}`);
}

async function verifyLog() {
  if (state.auditing) return;
  state.auditing = true;
  $('audit-verify').disabled = true;
  byTestId('audit-status').textContent = 'Verifying the log…';
  try {
    state.audit = await api('/v1/audit/verify');
    state.auditAt = Date.now();
    renderAudit();
  } catch (err) {
    byTestId('audit-status').textContent =
      `Could not verify the log: ${err instanceof ApiError ? `${err.code}: ${err.message}` : err}`;
    state.auditAt = Date.now();
  } finally {
    state.auditing = false;
    $('audit-verify').disabled = false;
  }
}

/** Reads every panel's routes and draws them; one at a time (a call meanwhile runs once more after). */
async function refresh() {
  if (state.refreshing !== null) {
    state.again = true;
    return state.refreshing;
  }
  clearTimeout(state.timer);
  state.refreshing = load();
  await state.refreshing;
  state.refreshing = null;
  if (state.again) {
    state.again = false;
    return refresh();
  }
  if (state.token !== null) state.timer = setTimeout(refresh, REFRESH_MS);
}

async function load() {
  try {
    const [status, rounds, members, versions] = await Promise.all([
      api('/v1/status'),
      api(`/v1/rounds?limit=${LIST_LIMIT}`),
      api('/v1/sites'),
      api(`/v1/versions?limit=${LIST_LIMIT}`),
    ]);
    const detail = await latestAssignments(rounds);
    renderStatus(status);
    renderRounds(rounds);
    renderSites(members);
    renderTree(detail, members);
    const grown = state.audit?.lastEntry?.sequence !== status.logSequence;
    const stale =
      state.audit === null ? state.auditAt === 0 : grown && Date.now() - state.auditAt > AUDIT_MAX_AGE_MS;
    if (stale) await verifyLog();
    renderVersions(versions);
    byTestId('updated').textContent = `updated ${time(Date.now())}`;
    showError(null);
  } catch (err) {
    showError(err);
    if (err instanceof ApiError && err.status === 401) signOut();
  }
}

async function signIn(token) {
  state.token = token;
  try {
    state.who = await api('/v1/whoami');
  } catch (err) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showError(err);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  const scopes = state.who.scopes;
  const widest = ['admin', 'operator', 'auditor'].find((s) => scopes.includes(s));
  byTestId('session-who').textContent = `${state.who.tokenId} (${widest})`;
  $('token-form').hidden = true;
  $('session').hidden = false;
  $('panels').hidden = false;
  byTestId('controls').hidden = !(scopes.includes('admin') || scopes.includes('operator'));
  await refresh();
}

function signOut() {
  clearTimeout(state.timer);
  sessionStorage.removeItem(TOKEN_KEY);
  Object.assign(state, fresh());
  $('token-form').hidden = false;
  $('session').hidden = true;
  $('panels').hidden = true;
  byTestId('controls').hidden = true;
}

// ---- controls (shown only to scopes the API accepts them from; the API checks again) ----

async function act(what, call) {
  const out = byTestId('control-result');
  out.textContent = `${what}…`;
  try {
    await call();
    out.textContent = `${what}: done`;
    showError(null);
  } catch (err) {
    out.textContent = `${what}: refused`;
    showError(err);
  }
  await refresh();
}

function wire() {
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('token-input').value.trim();
    $('token-input').value = '';
    if (token !== '') void signIn(token);
  });
  $('sign-out').addEventListener('click', signOut);
  $('refresh').addEventListener('click', () => void refresh());
  $('audit-verify').addEventListener('click', async () => {
    await verifyLog();
    await refresh();
  });
  $('run-start-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const rounds = Number($('run-rounds').value);
    const label = $('run-label').value.trim();
    void act('start run', () =>
      api('/v1/runs', { method: 'POST', body: label === '' ? { rounds } : { rounds, label } }),
    );
  });
  $('run-stop').addEventListener('click', () => {
    const run = state.status?.run;
    if (run)
      void act(`stop ${run.id}`, () =>
        api(`/v1/runs/${encodeURIComponent(run.id)}/stop`, { method: 'POST' }),
      );
  });
  $('abort-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const round = $('abort-form').dataset.round;
    const reason = $('abort-reason').value;
    void act(`abort round ${round}`, () =>
      api(`/v1/rounds/${encodeURIComponent(round)}/abort`, { method: 'POST', body: { reason } }),
    );
  });
  byTestId('versions-table').addEventListener('click', (e) => {
    const button = e.target instanceof Element ? e.target.closest('[data-testid="rollback-button"]') : null;
    if (button === null) return;
    const hash = button.dataset.hash;
    if (state.armedRollback !== hash) {
      state.armedRollback = hash;
      button.textContent = 'Confirm rollback';
      return;
    }
    state.armedRollback = null;
    void act(`rollback to ${short(hash)}`, () =>
      api('/v1/versions/rollback', { method: 'POST', body: { target: hash, reason: 'dashboard' } }),
    );
  });
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved !== null) void signIn(saved);
}

wire();
