// SPDX-License-Identifier: BSD-3-Clause
// app.js: cellgate's pages. `/` shows a user their own kernels and workspaces; `/admin` shows an
// admin every kernel, the users and their workspaces. Sign-in keeps the token in sessionStorage (this
// tab only; never a cookie, so no other site can ride it) and sends it as `Authorization: token`.
// Live through GET /api/events (Server-Sent Events, read with fetch so that the token goes in a
// header, not the URL), else by polling. Every string from the server reaches the page through
// textContent, never as HTML.
'use strict';
(() => {
  const TOKEN_KEY = 'cellgate.token';
  const POLL_MS = 5000;
  const adminPage = /\/admin$/.test(location.pathname);
  const api = new URL('api/', document.baseURI);
  const $ = (id) => document.getElementById(id);
  let me = null;
  let kernels = [];
  let refreshTimer = null;
  let events = null;  // AbortController of the event stream

  // ---------------------------------------------------------------- requests

  const token = () => sessionStorage.getItem(TOKEN_KEY);

  async function call(method, path, body, tokenOverride) {
    const headers = { Authorization: 'token ' + (tokenOverride || token()) };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(new URL(path, api), {
      method, headers, cache: 'no-store', credentials: 'omit',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = { message: text }; }
    if (res.status === 401 && !tokenOverride) signOut('The gateway no longer accepts this token. Sign in again.');
    return { status: res.status, ok: res.ok, data };
  }

  function reason(r) {
    return (r.data && (r.data.message || r.data.reason)) || 'HTTP ' + r.status;
  }

  function say(text, bad) {
    const s = $('status');
    s.textContent = text;
    s.classList.toggle('bad', !!bad);
  }

  // ---------------------------------------------------------------- formatting

  function bytes(n) {
    if (typeof n !== 'number') return '—';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
  }

  function duration(s) {
    if (!(s >= 0)) return '—';
    if (s < 60) return Math.floor(s) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min';
    if (s < 86400) return (s / 3600).toFixed(1) + ' h';
    return (s / 86400).toFixed(1) + ' d';
  }

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'title' || k === 'scope') e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function cell(label, content, cls) {
    const td = el('td', { 'data-label': label, class: cls || '' });
    td.append(content instanceof Node ? content : document.createTextNode(content));
    return td;
  }

  function confirmAction(title, text, okLabel) {
    const d = $('confirm');
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel;
    return new Promise((resolve) => {
      d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
      d.showModal();
    });
  }

  // ---------------------------------------------------------------- kernels

  function stateOf(k) {
    return k.paused ? 'paused' : (k.execution_state || 'unknown');
  }

  async function kernelAction(k, action) {
    const short = k.id.slice(0, 8);
    const verbs = {  // method, path, what is being done, what was done
      interrupt: ['POST', `kernels/${k.id}/interrupt`, 'Interrupting', 'Interrupted'],
      restart: ['POST', `kernels/${k.id}/restart`, 'Restarting', 'Restarted'],
      pause: ['POST', `kernels/${k.id}/pause`, 'Pausing', 'Paused'],
      resume: ['POST', `kernels/${k.id}/resume`, 'Resuming', 'Resumed'],
      shutdown: ['DELETE', `kernels/${k.id}`, 'Shutting down', 'Shut down'],
    };
    if (action === 'restart' && !(await confirmAction('Restart kernel ' + short + '?',
        'Its variables and imports are lost; its workspace files stay.', 'Restart'))) return;
    if (action === 'shutdown' && !(await confirmAction('Shut down kernel ' + short + '?',
        'The kernel stops and its memory is lost; its workspace files stay.', 'Shut down'))) return;
    const [method, path, doing, done] = verbs[action];
    say(`${doing} kernel ${short}…`);
    const r = await call(method, path, action === 'restart' ? {} : undefined);
    if (r.ok) say(`${done} kernel ${short}.`);
    else say(`Could not ${action === 'shutdown' ? 'shut down' : action} kernel ${short}: ${reason(r)}`, true);
    refreshKernels();
  }

  function actionButton(k, action, label, cls) {
    return el('button', {
      type: 'button', text: label, class: cls || '', 'data-action': action,
      'aria-label': `${label} kernel ${k.id.slice(0, 8)}`,
      on: { click: () => kernelAction(k, action) },
    });
  }

  function renderKernels() {
    const tbody = $('kernels').tBodies[0];
    const focused = document.activeElement;
    const keep = focused && focused.dataset && focused.dataset.action
      ? [focused.closest('tr') && focused.closest('tr').dataset.kernelId, focused.dataset.action] : null;
    tbody.replaceChildren();
    for (const k of kernels) {
      const state = stateOf(k);
      const badge = el('span', { class: 'state ' + state, text: state });
      const stateCell = el('span', {}, badge, k.reason ? el('span', { text: ' ' + k.reason }) : null);
      const last = Date.parse(k.last_activity);
      const idle = el('span', { 'data-since': isNaN(last) ? '' : String(last) });
      const actions = el('div', { class: 'actions' },
        actionButton(k, 'interrupt', 'Interrupt'),
        actionButton(k, 'restart', 'Restart'),
        k.paused ? actionButton(k, 'resume', 'Resume') : actionButton(k, 'pause', 'Pause'),
        actionButton(k, 'shutdown', 'Shut down', 'danger'));
      const kernelCell = el('span', {}, el('code', { text: k.id.slice(0, 8), title: k.id }),
        k.workspace ? el('span', { text: ' on ' + k.workspace }) : null);
      const ownerCell = cell('Owner', k.owner || '—');
      ownerCell.setAttribute('data-admin', '');
      tbody.append(el('tr', { 'data-kernel-id': k.id, 'data-state': state },
        cell('Kernel', kernelCell), ownerCell, cell('Kernelspec', k.name || '—'), cell('State', stateCell),
        cell('Memory', bytes(k.memory_bytes), 'num'),
        cell('CPU', typeof k.cpu_seconds === 'number' ? k.cpu_seconds.toFixed(1) + ' s' : '—', 'num'),
        cell('Idle', idle, 'num'), cell('Connections', String(k.connections ?? '—'), 'num'),
        cell('Actions', actions)));
    }
    $('kernels-empty').hidden = kernels.length > 0;
    tickIdle();
    if (keep) {
      const row = tbody.querySelector(`tr[data-kernel-id="${CSS.escape(keep[0] || '')}"]`);
      const again = row && (row.querySelector(`[data-action="${keep[1]}"]`) ||
                            row.querySelector('[data-action="resume"],[data-action="pause"]'));
      if (again) again.focus();
    }
  }

  function tickIdle() {
    const now = Date.now();
    for (const s of document.querySelectorAll('[data-since]')) {
      const since = Number(s.dataset.since);
      s.textContent = s.dataset.since ? duration((now - since) / 1000) : '—';
    }
  }

  async function refreshKernels() {
    const r = await call('GET', 'kernels');
    if (!r.ok) { say('Could not list kernels: ' + reason(r), true); return; }
    kernels = r.data;
    renderKernels();
  }

  function scheduleRefresh(what) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      refreshKernels().then(refreshWorkspaces);
      if (adminPage) refreshUsers();
      if (what && what.workspace) reloadOpenWorkspace(what.workspace, what.owner);
    }, 150);
  }

  // ---------------------------------------------------------------- users (admin)

  let users = null;

  async function refreshUsers() {
    const r = await call('GET', 'users');
    const note = $('users-note');
    if (r.status === 404) {
      users = null;
      note.textContent = 'This gateway does not list users (GET /api/users).';
      note.hidden = false;
      $('users').hidden = true;
      return;
    }
    if (!r.ok) { note.textContent = 'Could not list users: ' + reason(r); note.hidden = false; return; }
    users = r.data;
    note.hidden = true;
    $('users').hidden = false;
    const tbody = $('users').tBodies[0];
    tbody.replaceChildren();
    for (const u of users) {
      const lim = u.limits || {};
      const use = u.usage || {};
      const of = (used, limit, fmt) => (fmt(used) + (limit ? ' of ' + fmt(limit) : ''));
      const per = (limit, fmt, what) => (limit ? ` (${fmt(limit)} per ${what})` : '');
      tbody.append(el('tr', { 'data-user': u.name },
        cell('User', u.name), cell('Role', u.admin ? 'admin' : 'user'),
        cell('Kernels', of(use.kernels ?? 0, lim.max_kernels, String), 'num'),
        cell('Memory', bytes(use.memory_bytes) + per(lim.memory_bytes, bytes, 'kernel'), 'num'),
        cell('CPU', (typeof use.cpu_seconds === 'number' ? use.cpu_seconds.toFixed(1) + ' s' : '—') +
          per(lim.cpus, (c) => c + ' cores', 'kernel'), 'num'),
        cell('Connections', of(use.connections ?? 0, lim.max_connections, String), 'num'),
        cell('Workspace cap', lim.workspace_bytes ? bytes(lim.workspace_bytes) + ' each' : 'no cap', 'num')));
    }
  }

  // ---------------------------------------------------------------- workspaces

  const ownerQuery = (owner) => (adminPage && owner && me && owner !== me.name ? '?owner=' + encodeURIComponent(owner) : '');
  const wsPath = (name, rest) => `workspaces/${encodeURIComponent(name)}${rest || ''}`;

  // Adds workspaces that appeared and drops those that went; an entry already shown stays as it
  // is (open, with its snapshots and any diff being read).
  async function refreshWorkspaces() {
    const owners = new Set([me.name]);
    if (adminPage) {
      for (const k of kernels) if (k.owner) owners.add(k.owner);
      for (const u of users || []) owners.add(u.name);
    }
    const box = $('workspaces');
    const shown = new Map([...box.querySelectorAll('details.ws')].map((d) => [d.dataset.owner + '/' + d.dataset.workspace, d]));
    const wanted = [];
    for (const owner of [...owners].sort()) {
      const r = await call('GET', 'workspaces' + ownerQuery(owner));
      if (!r.ok) continue;
      for (const w of r.data) wanted.push([owner, w.name]);
    }
    const keep = new Set();
    for (const [owner, name] of wanted) {
      const key = owner + '/' + name;
      keep.add(key);
      if (shown.has(key)) continue;
      const details = el('details', { class: 'ws card', 'data-workspace': name, 'data-owner': owner },
        el('summary', { text: adminPage ? key : name }),
        el('div', { class: 'snapshots' }));
      details.addEventListener('toggle', () => { if (details.open) loadSnapshots(details); });
      shown.set(key, details);
    }
    for (const [key, d] of shown) if (!keep.has(key)) shown.delete(key);
    const order = wanted.map(([o, n]) => shown.get(o + '/' + n));
    box.replaceChildren(...(order.length ? order : [el('p', { class: 'empty', text: 'No workspaces.' })]));
  }

  function reloadOpenWorkspace(name, owner) {
    for (const d of document.querySelectorAll('details.ws[open]'))
      if (d.dataset.workspace === name && (!owner || d.dataset.owner === owner)) loadSnapshots(d);
  }

  async function loadSnapshots(details) {
    const { workspace: name, owner } = details.dataset;
    const box = details.querySelector('.snapshots');
    const r = await call('GET', wsPath(name, '/snapshots') + ownerQuery(owner));
    if (!r.ok) { box.replaceChildren(el('p', { class: 'error', text: 'Could not list snapshots: ' + reason(r) })); return; }
    const snaps = r.data.slice().reverse();  // newest first
    const table = el('table', {},
      el('caption', { class: 'sr-only', text: `Snapshots of ${name}` }),
      el('thead', {}, el('tr', {}, ...['Snapshot', 'Taken', 'Label', 'Changes', 'Size', 'Actions']
        .map((h) => el('th', { scope: 'col', text: h })))));
    const tbody = el('tbody');
    for (const s of snaps) {
      const changes = `+${s.added ?? 0} ~${s.changed ?? 0} −${s.removed ?? 0}`;
      const diffBox = el('div', { class: 'diff', hidden: true, 'aria-live': 'polite' });
      const actions = el('div', { class: 'actions' },
        el('button', { type: 'button', text: 'Diff', 'data-action': 'diff', disabled: !s.parent,
          'aria-label': `Diff snapshot ${s.id} with the one before`,
          on: { click: () => { openDiffs.add(diffKey(owner, name, s.id)); showDiff(owner, name, s, diffBox); } } }),
        el('button', { type: 'button', text: 'Restore', 'data-action': 'restore', class: 'danger',
          'aria-label': `Restore ${name} to snapshot ${s.id}`,
          on: { click: () => restore(owner, name, s) } }));
      tbody.append(el('tr', { 'data-snapshot': s.id },
        cell('Snapshot', el('code', { text: s.id })), cell('Taken', new Date(s.created).toLocaleString()),
        cell('Label', s.label || (s.automatic ? 'automatic' : '')), cell('Changes', changes, 'num'),
        cell('Size', bytes(s.bytes), 'num'), cell('Actions', el('div', {}, actions, diffBox))));
    }
    table.append(tbody);
    box.replaceChildren(snaps.length ? el('div', { class: 'table-wrap' }, table)
                                     : el('p', { class: 'empty', text: 'No snapshots yet.' }));
    // The table is rebuilt on every event about the workspace: the diffs being read stay open.
    for (const s of snaps) {
      if (!openDiffs.has(diffKey(owner, name, s.id))) continue;
      const row = [...tbody.rows].find((r) => r.dataset.snapshot === s.id);
      if (row) showDiff(owner, name, s, row.querySelector('.diff'));
    }
  }

  // The diffs a user opened (owner/workspace/snapshot), reopened when their table is rebuilt.
  const openDiffs = new Set();
  const diffKey = (owner, name, id) => `${owner}/${name}/${id}`;

  async function showDiff(owner, name, s, box) {
    const q = `?from=${encodeURIComponent(s.parent)}&to=${encodeURIComponent(s.id)}`;
    const r = await call('GET', wsPath(name, '/diff') + q + (ownerQuery(owner) ? '&' + ownerQuery(owner).slice(1) : ''));
    box.hidden = false;
    if (!r.ok) { box.replaceChildren(el('p', { class: 'error', text: 'Could not diff: ' + reason(r) })); return; }
    const list = (title, items) => (items && items.length
      ? el('div', {}, el('strong', { text: `${title} (${items.length})` }), el('ul', {}, ...items.map((p) => el('li', { text: p }))))
      : null);
    const parts = [list('Added', r.data.added), list('Changed', r.data.changed), list('Removed', r.data.removed)].filter(Boolean);
    box.replaceChildren(...(parts.length ? parts : [el('p', { text: 'No changes.' })]));
  }

  async function restore(owner, name, s) {
    if (!(await confirmAction(`Restore ${name}?`,
        `Its files become those of snapshot ${s.id}. Running kernels keep their memory.`, 'Restore'))) return;
    say(`Restoring ${name} to ${s.id}…`);
    const r = await call('POST', wsPath(name, `/snapshots/${encodeURIComponent(s.id)}/restore`) + ownerQuery(owner), {});
    if (r.ok) say(`Restored ${name} to ${s.id}: ${r.data.files_written ?? 0} files written.`);
    else say(`Could not restore ${name}: ${reason(r)}`, true);
    reloadOpenWorkspace(name, owner);
  }

  // ---------------------------------------------------------------- live updates

  // Server-Sent Events over fetch: EventSource cannot send the Authorization header. Resumes with
  // Last-Event-ID; falls back to polling where the gateway has no event stream.
  async function followEvents() {
    events = new AbortController();
    const { signal } = events;
    let lastId = null;
    let delay = 1000;
    while (!signal.aborted) {
      try {
        const headers = { Authorization: 'token ' + token(), Accept: 'text/event-stream' };
        if (lastId) headers['Last-Event-ID'] = lastId;
        const res = await fetch(new URL('events', api), { headers, signal, cache: 'no-store', credentials: 'omit' });
        if (res.status === 404 || res.status === 405) return poll();
        if (res.status === 401) return signOut('The gateway no longer accepts this token. Sign in again.');
        if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
        $('live-state').textContent = 'Live.';
        delay = 1000;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let end;
          while ((end = buf.search(/\r?\n\r?\n/)) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + (buf[end] === '\r' ? 4 : 2));
            let data = '';
            for (const line of block.split(/\r?\n/)) {
              if (line.startsWith('id:')) lastId = line.slice(3).trim();
              else if (line.startsWith('data:')) data += line.slice(5).trimStart();
            }
            if (!data) continue;
            let ev = {};
            try { ev = JSON.parse(data); } catch (e) { /* a comment or keepalive */ }
            scheduleRefresh(ev);
          }
        }
      } catch (e) {
        if (signal.aborted) return;
      }
      $('live-state').textContent = 'Reconnecting…';
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
      scheduleRefresh();
    }
  }

  function poll() {
    $('live-state').textContent = `Updated every ${POLL_MS / 1000} s.`;
    const { signal } = events;
    const timer = setInterval(() => (signal.aborted ? clearInterval(timer) : scheduleRefresh()), POLL_MS);
  }

  // ---------------------------------------------------------------- session

  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    if (events) events.abort();
    me = null;
    for (const id of ['kernels-section', 'users-section', 'workspaces-section', 'who', 'nav', 'sign-out']) $(id).hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('token').value = '';
    $('token').focus();
  }

  async function start() {
    const r = await call('GET', 'me');
    if (!r.ok) return;
    me = r.data;
    if (adminPage && !me.admin) {
      say('This page is for administrators. Your own kernels are on the main page.', true);
      $('nav').hidden = false;
      return;
    }
    document.body.classList.toggle('admin', adminPage);
    document.title = adminPage ? 'cellgate: admin' : 'cellgate: my kernels';
    $('login').hidden = true;
    $('who').textContent = `Signed in as ${me.name}${me.admin ? ' (admin)' : ''}`;
    $('who').hidden = $('nav').hidden = $('sign-out').hidden = false;
    $('admin-link').hidden = !me.admin;
    $('kernels-section').hidden = $('workspaces-section').hidden = false;
    $('users-section').hidden = !adminPage;
    await refreshKernels();
    if (adminPage) await refreshUsers();
    await refreshWorkspaces();
    followEvents();
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('login').addEventListener('submit', async (e) => {
      e.preventDefault();
      const t = $('token').value.trim();
      const r = await call('GET', 'me', undefined, t);
      if (!r.ok) { $('login-error').textContent = r.status === 401 || r.status === 403 ? 'That token was not accepted.' : reason(r); return; }
      sessionStorage.setItem(TOKEN_KEY, t);
      $('token').value = '';
      $('login-error').textContent = '';
      start();
    });
    $('sign-out').addEventListener('click', () => signOut(''));
    setInterval(tickIdle, 1000);
    if (token()) start(); else signOut('');
  });
})();
