// The memory playground: a browser client of the memorychat API, signed in with the user's own token.
// Plain DOM code: every value from the API goes in through textContent, never as HTML.

const TOKEN_KEY = 'memorychat-playground-token';
const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem(TOKEN_KEY);

/** An element with text and attributes; children appended in order. */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'text') node.textContent = value;
    else if (key === 'className') node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function say(message, isError = false) {
  const status = $('status');
  status.textContent = message;
  status.classList.toggle('error', isError);
}

/** The API with the token; a problem document becomes an Error with its title and detail. */
async function api(method, path, body, extraHeaders = {}) {
  const headers = { authorization: `Bearer ${token}`, ...extraHeaders };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401) {
    signOut();
    throw new Error('The token was refused: sign in again.');
  }
  const type = response.headers.get('content-type') ?? '';
  const payload = type.includes('json') ? await response.json() : await response.text();
  if (!response.ok) {
    const problem = typeof payload === 'object' ? payload : {};
    throw new Error(`${problem.title ?? response.statusText}${problem.detail ? `: ${problem.detail}` : ''} (${response.status})`);
  }
  return { status: response.status, body: payload, headers: response.headers };
}

function guarded(action) {
  return async (event) => {
    event?.preventDefault();
    try {
      await action(event);
    } catch (err) {
      say(err.message, true);
    }
  };
}

/** Saves text as a file: the API needs the token header, so links cannot point at it directly. */
function download(name, type, content) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const link = el('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// ---- sign-in and views

function claimsOf(jwt) {
  try {
    return JSON.parse(atob(jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return {};
  }
}

function userOf(jwt) {
  return claimsOf(jwt).sub ?? 'signed in';
}

/**
 * Whether to offer the tenant's admin actions: a hint from the token's default roles claim only; the
 * service decides (403 for anyone else).
 */
function isAdmin(jwt) {
  const roles = claimsOf(jwt).roles;
  return (Array.isArray(roles) ? roles : String(roles ?? '').split(' ')).includes('memory-admin');
}

function signIn(newToken) {
  token = newToken.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  render();
  showView('chat');
  say(`Signed in as ${userOf(token)}.`);
  loadSessions().catch((err) => say(err.message, true));
}

function signOut() {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  forgetSignedOutUser();
  render();
  say('Signed out.');
}

/**
 * What the page shows of the user who signed out leaves it with them: on a shared browser the next
 * user must not find their conversation, sessions, search results or Denodo password in hidden views.
 */
function forgetSignedOutUser() {
  $('transcript').replaceChildren();
  $('chat-session').replaceChildren(el('option', { value: '', text: 'New conversation' }));
  for (const id of ['question', 'answerer-user', 'answerer-password', 'search-query']) $(id).value = '';
  $('answerer-credentials').open = false;
  $('session-table').tBodies[0].replaceChildren();
  $('session-detail').hidden = true;
  $('session-detail-title').textContent = 'Session';
  $('session-turns').replaceChildren();
  $('search-results').tBodies[0].replaceChildren();
  $('search-results').hidden = true;
  for (const id of ['export-status', 'erase-status']) $(id).textContent = '';
  $('erase-confirm').hidden = true;
}

function render() {
  const signedIn = Boolean(token);
  $('sign-in').hidden = signedIn;
  $('views').hidden = !signedIn;
  $('sign-out').hidden = !signedIn;
  $('who').hidden = !signedIn;
  $('who').textContent = signedIn ? `Signed in as ${userOf(token)}` : '';
  $('local-token-form').hidden = signedIn || document.body.dataset.localToken !== 'true';
  for (const view of ['chat', 'sessions', 'search', 'my-data']) if (!signedIn) $(view).hidden = true;
}

function showView(name) {
  for (const button of document.querySelectorAll('#views button')) {
    const current = button.dataset.view === name;
    if (current) button.setAttribute('aria-current', 'page');
    else button.removeAttribute('aria-current');
    $(button.dataset.view).hidden = !current;
  }
}

// ---- chat

function facts(pairs) {
  const list = el('dl', { className: 'facts' });
  for (const [term, value] of pairs) {
    if (value === undefined || value === null) continue;
    list.append(el('dt', { text: term }), el('dd', { text: String(value) }));
  }
  return list;
}

function seconds(value) {
  return typeof value === 'number' ? `${(value * 1000).toFixed(0)} ms` : undefined;
}

/** A Markdown table's separator row: `| --- | :---: |`. */
const TABLE_RULE = /^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$/;

function tableCells(line) {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim());
}

/**
 * The answer's text, with Markdown tables (which answerers send for rows) drawn as tables. Every
 * piece still goes in as text: a cell holding markup shows the markup.
 */
function answerNode(text) {
  const node = el('div', { className: 'answer' });
  const lines = String(text).split('\n');
  let prose = [];
  const flushProse = () => {
    if (prose.join('').trim()) node.append(el('p', { text: prose.join('\n').trim() }));
    prose = [];
  };
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim().startsWith('|') && TABLE_RULE.test(lines[i + 1]?.trim() ?? '')) {
      flushProse();
      const header = tableCells(lines[i]);
      const rows = [];
      i += 2;
      while (i < lines.length && lines[i].trim().startsWith('|')) rows.push(tableCells(lines[i++]));
      i--;
      node.append(
        el(
          'table',
          { className: 'answer-table' },
          el('thead', {}, el('tr', {}, ...header.map((cell) => el('th', { scope: 'col', text: cell })))),
          el('tbody', {}, ...rows.map((row) => el('tr', {}, ...row.map((cell) => el('td', { text: cell }))))),
        ),
      );
    } else {
      prose.push(lines[i]);
    }
  }
  flushProse();
  return node;
}

/** Similar past questions, one row per question text: the same question asked in several conversations is one row. */
function groupedSimilar(similar) {
  const groups = new Map();
  for (const s of similar) {
    const key = s.question.trim().replace(/\s+/g, ' ').toLowerCase();
    const group = groups.get(key);
    if (group) group.places.push(s);
    else groups.set(key, { best: s, places: [s] });
  }
  return [...groups.values()];
}

function memoryUsed(reply, roundTripMs) {
  const used = reply.memory_context_used;
  const details = el('details', { open: '', className: 'memory' }, el('summary', { text: 'Memory used for this answer' }));

  const historyTurns = used.history_turns ?? [];
  details.append(
    el('h4', { text: `History: ${used.history_messages_count} earlier turn${used.history_messages_count === 1 ? '' : 's'}` }),
    historyTurns.length ? el('p', { text: `Turns ${historyTurns.join(', ')} of this conversation` }) : el('p', { text: 'None.' }),
  );

  const similar = used.similar_queries ?? [];
  details.append(el('h4', { text: `Similar past questions: ${used.similar_queries_count}` }));
  if (similar.length) {
    const rows = groupedSimilar(similar).map(({ best, places }) =>
      el(
        'tr',
        {},
        el('td', { text: best.similarity.toFixed(3) }),
        el('td', { text: best.question }),
        el('td', {
          text: places.map((s) => `turn ${s.turn_number} of ${s.session_id.slice(0, 8)}…`).join(', '),
        }),
      ),
    );
    details.append(
      el(
        'table',
        { className: 'similar' },
        el('caption', { text: 'Most similar first' }),
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            el('th', { scope: 'col', text: 'Score' }),
            el('th', { scope: 'col', text: 'Question' }),
            el('th', { scope: 'col', text: 'Where' }),
          ),
        ),
        el('tbody', {}, ...rows),
      ),
    );
  } else {
    details.append(el('p', { text: 'None.' }));
  }

  const verified = used.verified_pairs ?? [];
  details.append(el('h4', { text: `Verified examples of the tenant: ${verified.length}` }));
  details.append(
    verified.length
      ? el(
          'ul',
          { className: 'verified' },
          ...verified.map((p) => el('li', { text: `${p.question} (${p.views.join(', ') || 'no views'})` })),
        )
      : el('p', { text: 'None.' }),
  );

  details.append(
    el('h4', { text: 'Sent upstream' }),
    el('p', { text: 'Question:' }),
    el('pre', { className: 'augmented', text: used.augmented_question }),
  );
  if (used.custom_instructions) details.append(el('p', { text: 'Custom instructions:' }), el('pre', { text: used.custom_instructions }));

  const upstreamTokens = reply.tokens && typeof reply.tokens === 'object' ? reply.tokens : {};
  details.append(
    el('h4', { text: 'Tokens and timings' }),
    facts([
      ['Memory context tokens', `${used.context_tokens}${used.context_truncated ? ' (truncated to fit)' : ''}`],
      [
        'Upstream tokens (in / out / total)',
        upstreamTokens.total_tokens === undefined
          ? undefined
          : `${upstreamTokens.input_tokens ?? '?'} / ${upstreamTokens.output_tokens ?? '?'} / ${upstreamTokens.total_tokens}`,
      ],
      ['Memory retrieval', seconds(reply.memory_retrieval_time)],
      ['Upstream LLM', seconds(reply.llm_time)],
      ['Upstream SQL execution', seconds(reply.sql_execution_time)],
      ['Upstream total', seconds(reply.total_execution_time)],
      ['Round trip (this browser)', `${roundTripMs.toFixed(0)} ms`],
    ]),
  );
  return details;
}

/** The user's own answerer credentials, as HTTP Basic, for memorychat to forward (X-Upstream-Authorization). */
function answererCredentials() {
  const user = $('answerer-user').value;
  if (!user) return {};
  const bytes = new TextEncoder().encode(`${user}:${$('answerer-password').value}`);
  return { 'x-upstream-authorization': `Basic ${btoa(String.fromCharCode(...bytes))}` };
}

async function ask() {
  const question = $('question').value.trim();
  if (!question) return;
  const sessionId = $('chat-session').value;
  const body = { question, use_memory: $('use-memory').checked, ...(sessionId ? { session_id: sessionId } : {}) };
  say('Asking…');
  const started = performance.now();
  const { body: reply } = await api('POST', '/memoryChat', body, answererCredentials());
  const roundTripMs = performance.now() - started;

  const meta = reply.conversation_metadata;
  const item = el(
    'li',
    { className: 'exchange' },
    el('p', { className: 'question', text: question }),
    answerNode(reply.answer),
    typeof reply.sql_query === 'string' && reply.sql_query ? el('pre', { className: 'sql', text: reply.sql_query }) : null,
    el('p', {
      className: 'turn-meta',
      text: meta ? `${meta.session_name} · turn ${meta.message_count}` : 'not stored (outside the memory rollout)',
    }),
    reply.warnings?.length ? el('p', { className: 'error', text: `Warnings: ${reply.warnings.join('; ')}` }) : null,
    memoryUsed(reply, roundTripMs),
  );
  $('transcript').prepend(item);
  $('question').value = '';
  await loadSessions(meta?.conversation_id);
  say(
    meta
      ? `Answered (turn ${meta.message_count} of “${meta.session_name}”).`
      : 'Answered; this account is outside the memory rollout, so nothing was stored.',
  );
}

// ---- sessions

async function loadSessions(select) {
  const { body } = await api('GET', '/sessions?limit=100');
  const chosen = select ?? $('chat-session').value;
  const picker = $('chat-session');
  picker.replaceChildren(el('option', { value: '', text: 'New conversation' }));
  const rows = [];
  for (const session of body.sessions) {
    picker.append(el('option', { value: session.session_id, text: `${session.session_name} (${session.message_count})` }));
    const open = el('button', { type: 'button', text: 'Open', 'aria-label': `Open ${session.session_name}` });
    open.addEventListener(
      'click',
      guarded(() => openSession(session.session_id)),
    );
    const resume = el('button', { type: 'button', text: 'Continue in chat', 'aria-label': `Continue ${session.session_name} in chat` });
    resume.addEventListener(
      'click',
      guarded(() => {
        $('chat-session').value = session.session_id;
        showView('chat');
        $('question').focus();
      }),
    );
    rows.push(
      el(
        'tr',
        {},
        el('td', { text: session.session_name }),
        el('td', { text: String(session.message_count) }),
        el('td', { text: new Date(session.updated_at).toLocaleString() }),
        el('td', { text: new Date(session.expires_at).toLocaleString() }),
        el('td', {}, open, resume),
      ),
    );
  }
  $('session-table').tBodies[0].replaceChildren(...rows);
  picker.value = body.sessions.some((s) => s.session_id === chosen) ? chosen : '';
}

async function openSession(id) {
  const { body: session } = await api('GET', `/sessions/${id}`);
  $('session-detail').hidden = false;
  $('session-detail-title').textContent = `${session.session_name}: ${session.turns.length} turns`;
  const items = session.turns.map((turn) => {
    const item = el(
      'li',
      {},
      el('p', { className: 'question', text: turn.question }),
      el('p', { className: 'answer', text: turn.answer }),
      el('p', {
        className: 'turn-meta',
        text: `turn ${turn.turn_number} · ${turn.status} · ${new Date(turn.created_at).toLocaleString()}`,
      }),
    );
    if (turn.sql_query) {
      const showSql = el('button', { type: 'button', text: 'SQL', 'aria-label': `SQL of turn ${turn.turn_number}` });
      const csv = el('button', { type: 'button', text: 'CSV', 'aria-label': `Download the result of turn ${turn.turn_number} as CSV` });
      const sqlBox = el('pre', { className: 'sql' });
      sqlBox.hidden = true;
      showSql.addEventListener(
        'click',
        guarded(async () => {
          const { body } = await api('GET', `/sessions/${id}/turns/${turn.turn_number}/sql`);
          sqlBox.textContent = body.sql_query;
          sqlBox.hidden = false;
        }),
      );
      csv.addEventListener(
        'click',
        guarded(async () => {
          const { body } = await api('GET', `/sessions/${id}/turns/${turn.turn_number}/result.csv`);
          download(`turn-${turn.turn_number}.csv`, 'text/csv', body);
          say(`Downloaded the result of turn ${turn.turn_number}.`);
        }),
      );
      item.append(showSql, csv, sqlBox);
      if (turn.status === 'ok' && isAdmin(token)) {
        const verify = el('button', { type: 'button', text: 'Verify', 'aria-label': `Verify turn ${turn.turn_number} for the tenant` });
        verify.addEventListener(
          'click',
          guarded(async () => {
            await api('POST', '/admin/verified-pairs', { user_id: userOf(token), session_id: id, turn_number: turn.turn_number });
            say(`Turn ${turn.turn_number} is a verified pair of the tenant: its users' questions over its databases now get it.`);
          }),
        );
        item.append(verify);
      }
    }
    return item;
  });
  $('session-turns').replaceChildren(...items);
  $('session-detail-title').focus();
}

// ---- search

async function search() {
  const { body } = await api('POST', '/memory/search', { query: $('search-query').value, k: Number($('search-k').value) || 5 });
  const rows = body.results.map((r) =>
    el(
      'tr',
      {},
      el('td', { text: r.similarity.toFixed(3) }),
      el('td', { text: r.question }),
      el('td', { text: r.answer }),
      el('td', { className: 'sql', text: r.sql_query ?? '' }),
      el('td', { text: `${r.session_name} (turn ${r.turn_number})` }),
    ),
  );
  $('search-results').tBodies[0].replaceChildren(...rows);
  $('search-results').hidden = false;
  say(`${rows.length} past turn${rows.length === 1 ? '' : 's'} found.`);
}

// ---- my data

/**
 * Polls a GDPR request from its 202 until it has finished, as often as each reply's Retry-After says:
 * every poll counts against the user's requests a minute, and faster polls of a long export were
 * refused 429 before it finished.
 */
async function waitForRequest(accepted) {
  let reply = accepted;
  while (reply.body.status !== 'completed' && reply.body.status !== 'failed') {
    const seconds = Number(reply.headers.get('retry-after') ?? 1);
    await new Promise((resolve) => setTimeout(resolve, 1000 * seconds));
    reply = await api('GET', accepted.body.status_url);
  }
  return reply.body;
}

async function exportData() {
  $('export-status').textContent = 'Export queued…';
  const done = await waitForRequest(await api('POST', '/me/export'));
  if (done.status !== 'completed') throw new Error(`The export failed (${done.error_code ?? 'unknown'}).`);
  const { body } = await api('GET', done.download_url);
  download('memorychat-export.json', 'application/json', JSON.stringify(body, null, 2));
  const counts = Object.entries(done.counts)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ');
  $('export-status').textContent = `Exported ${counts}.`;
  say('Export downloaded.');
}

async function eraseData() {
  $('erase-confirm').hidden = true;
  $('erase-status').textContent = 'Erasing…';
  const done = await waitForRequest(await api('DELETE', '/me'));
  if (done.status !== 'completed') throw new Error(`The erasure failed (${done.error_code ?? 'unknown'}).`);
  $('erase-status').textContent = 'Everything of yours was erased.';
  $('transcript').replaceChildren();
  await loadSessions();
  say('Erased.');
}

// ---- wiring

$('token-form').addEventListener(
  'submit',
  guarded(() => signIn($('token').value)),
);
$('local-token-form').addEventListener(
  'submit',
  guarded(async () => {
    const response = await fetch('/playground/local-token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: $('local-user').value }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.detail ?? body.title ?? 'no local token');
    signIn(body.token);
  }),
);
$('sign-out').addEventListener('click', () => signOut());
for (const button of document.querySelectorAll('#views button')) {
  button.addEventListener(
    'click',
    guarded(async () => {
      showView(button.dataset.view);
      if (button.dataset.view === 'sessions') await loadSessions();
    }),
  );
}
$('chat-form').addEventListener('submit', guarded(ask));
// Enter sends, as in every chat; Shift+Enter starts a new line (and Enter while an IME composes is the IME's).
$('question').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $('chat-form').requestSubmit();
  }
});
$('refresh-sessions').addEventListener(
  'click',
  guarded(() => loadSessions()),
);
$('search-form').addEventListener('submit', guarded(search));
$('export').addEventListener('click', guarded(exportData));
$('erase').addEventListener('click', () => {
  $('erase-confirm').hidden = false;
  $('erase-no').focus();
});
$('erase-no').addEventListener('click', () => {
  $('erase-confirm').hidden = true;
  $('erase').focus();
});
$('erase-yes').addEventListener('click', guarded(eraseData));

render();
if (token) {
  showView('chat');
  loadSessions().catch((err) => say(err.message, true));
}
