// SPDX-License-Identifier: Apache-2.0
// page_test: cellgate's pages in Debian's Chromium, driven by playwright-core. A kernel started
// through the REST API as JupyterLab starts one appears on the admin page; the page interrupts,
// restarts and shuts it down, shows a workspace's snapshots, their diff, and restores one. Also:
// the token stays in sessionStorage (no cookie, never in a URL), every control has a name, and a
// phone-sized window needs no sideways scrolling.
// env: PAGE_URL (the page server), CELLGATE_URL/CELLGATE_TOKEN (the gateway), SHOT_DIR.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');  // NODE_PATH: the build's web-clients

const page_url = process.env.PAGE_URL;
const gw = process.env.CELLGATE_URL;
const token = process.env.CELLGATE_TOKEN;
const H = { Authorization: `token ${token}`, 'Content-Type': 'application/json' };
const rest = async (method, path, body) => {
  const r = await fetch(new URL(path, gw), { method, headers: H, body: body && JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, data: text ? JSON.parse(text) : null };
};
const step = (what) => console.log(`page_test: ${what}`);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  // Root in a container: Chromium's own sandbox needs user namespaces it may not get; the rest keep
  // it from reaching for Google's hosts on a machine without a network.
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
let kernel = null;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const urls = [];
  page.on('request', (r) => urls.push(r.url()));
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  // Sign in on the admin page.
  await page.goto(new URL('admin', page_url).href);
  await page.getByLabel('Token').fill('not-the-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('That token was not accepted.').waitFor();
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText(/Signed in as .* \(admin\)/).waitFor();
  step('signed in');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('cellgate.token')), token);
  assert.deepEqual(await context.cookies(), []);
  // Live through GET /api/events (not the polling fallback).
  await page.locator('#live-state', { hasText: 'Live.' }).waitFor();
  // Users with their limits and usage (single-token mode: the implicit admin).
  await page.locator('#users tr[data-user="default"]').waitFor();
  step('live, with the users table');

  // A kernel started as JupyterLab starts one: POST /api/kernels.
  const started = await rest('POST', 'api/kernels', { name: 'python3' });
  assert.equal(started.status, 201, JSON.stringify(started.data));
  kernel = started.data.id;
  const row = page.locator(`tr[data-kernel-id="${kernel}"]`);
  await row.waitFor({ timeout: 30000 });
  await row.locator('.state', { hasText: /idle|busy|starting/ }).waitFor();
  step(`kernel ${kernel.slice(0, 8)} appeared`);
  // Memory and CPU from the kernel's cgroup.
  await row.locator('td[data-label="Memory"]', { hasText: /\d( \w?iB| B)$/ }).waitFor();
  await row.locator('td[data-label="CPU"]', { hasText: /\d s$/ }).waitFor();

  // Files, so that the workspace has snapshots: two executes, the second changes a file.
  for (const code of ["open('notes.txt','w').write('first\\n')", "open('notes.txt','a').write('second\\n'); open('plot.txt','w').write('x')"]) {
    const r = await rest('POST', `api/kernels/${kernel}/execute`, { code });
    assert.equal(r.data.status, 'ok', JSON.stringify(r.data));
  }

  await row.getByRole('button', { name: `Interrupt kernel ${kernel.slice(0, 8)}` }).click();
  await page.getByRole('status').getByText(`Interrupted kernel ${kernel.slice(0, 8)}.`).waitFor();
  step('interrupted from the page');

  // Pause and resume from the page: the cgroup freezer, shown as its own state.
  await row.getByRole('button', { name: `Pause kernel ${kernel.slice(0, 8)}` }).click();
  await page.getByRole('status').getByText(`Paused kernel ${kernel.slice(0, 8)}.`).waitFor();
  await row.locator('.state', { hasText: 'paused' }).waitFor();
  assert.equal((await rest('GET', `api/kernels/${kernel}`)).data.paused, true);
  await row.getByRole('button', { name: `Resume kernel ${kernel.slice(0, 8)}` }).click();
  await page.getByRole('status').getByText(`Resumed kernel ${kernel.slice(0, 8)}.`).waitFor();
  await row.locator('.state', { hasText: 'idle' }).waitFor();
  assert.equal((await rest('GET', `api/kernels/${kernel}`)).data.paused, false);
  step('paused and resumed from the page');
  // Paused elsewhere (as --pause-after or another client would): the page hears of it.
  assert.equal((await rest('POST', `api/kernels/${kernel}/pause`)).data.paused, true);
  await row.locator('.state', { hasText: 'paused' }).waitFor();
  assert.equal((await rest('POST', `api/kernels/${kernel}/resume`)).data.paused, false);
  await row.locator('.state', { hasText: 'idle' }).waitFor();
  step('a pause made through the REST API showed on the page');

  await row.getByRole('button', { name: `Restart kernel ${kernel.slice(0, 8)}` }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText(`Restart kernel ${kernel.slice(0, 8)}?`).waitFor();
  await dialog.getByRole('button', { name: 'Restart' }).click();
  await page.getByRole('status').getByText(`Restarted kernel ${kernel.slice(0, 8)}.`).waitFor({ timeout: 60000 });
  step('restarted from the page');

  // The workspace's snapshots, a diff and a restore.
  const ws = page.locator('details.ws[data-workspace="default"]');
  await ws.locator('summary').click();
  const snaps = ws.locator('tr[data-snapshot]');
  await snaps.first().waitFor();
  const list = (await rest('GET', 'api/workspaces/default/snapshots')).data;
  assert.ok(list.length >= 2, JSON.stringify(list));
  const newest = list[list.length - 1];
  const older = list[list.length - 2];
  const newestRow = ws.locator(`tr[data-snapshot="${newest.id}"]`);
  await newestRow.getByRole('button', { name: /^Diff snapshot/ }).click();
  await newestRow.getByText('plot.txt').waitFor();
  await newestRow.getByText('notes.txt').waitFor();
  step('diffed the newest snapshot');
  await ws.locator(`tr[data-snapshot="${older.id}"]`).getByRole('button', { name: `Restore default to snapshot ${older.id}` }).click();
  await dialog.getByRole('button', { name: 'Restore' }).click();
  await page.getByRole('status').getByText(`Restored default to ${older.id}`).waitFor({ timeout: 60000 });
  const back = await rest('POST', `api/kernels/${kernel}/tools/read`, { path: 'notes.txt' });
  assert.equal(back.data.content, 'first\n', JSON.stringify(back.data));
  step('restored a snapshot from the page');

  await page.screenshot({ path: `${process.env.SHOT_DIR}/admin.png`, fullPage: true });
  step(`screenshot in ${process.env.SHOT_DIR}/admin.png`);

  // Every control is named; every input labelled.
  const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, a')]
    .filter((e) => e.offsetParent !== null)
    .filter((e) => !(e.getAttribute('aria-label') || e.labels?.length || e.textContent.trim()))
    .map((e) => e.outerHTML));
  assert.deepEqual(unnamed, []);

  // Shut it down from the page: the row goes.
  await row.getByRole('button', { name: `Shut down kernel ${kernel.slice(0, 8)}` }).click();
  await dialog.getByRole('button', { name: 'Shut down' }).click();
  await row.waitFor({ state: 'detached', timeout: 60000 });
  assert.equal((await rest('GET', `api/kernels/${kernel}`)).status, 404);
  kernel = null;
  step('shut down from the page');

  // A phone: the user's page, a kernel as a card, no sideways scrolling.
  const second = await rest('POST', 'api/kernels', { name: 'python3' });
  assert.equal(second.status, 201);
  kernel = second.data.id;
  const phone = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
  const p2 = await phone.newPage();
  await p2.goto(page_url);
  await p2.getByLabel('Token').fill(token);
  await p2.getByRole('button', { name: 'Sign in' }).click();
  await p2.getByText(/Signed in as/).waitFor();
  await p2.locator(`tr[data-kernel-id="${kernel}"]`).waitFor();
  await p2.locator('details.ws[data-workspace="default"]').waitFor();
  const overflow = await p2.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the phone page scrolls sideways by ${overflow}px`);
  await p2.screenshot({ path: `${process.env.SHOT_DIR}/phone.png`, fullPage: true });
  assert.equal((await rest('DELETE', `api/kernels/${kernel}`)).status, 204);
  kernel = null;
  step('readable on a phone');

  assert.ok(!urls.some((u) => u.includes(token)), 'the token appeared in a URL');
  // The wrong token tried first is a 401, and /api/users, /api/events are 404 on an older gateway.
  assert.deepEqual(errors.filter((e) => !/status of (401|404)/.test(e)), [], 'errors in the page');
  console.log('page_test: 1 passed, 0 failed');
} finally {
  if (kernel) await rest('DELETE', `api/kernels/${kernel}`).catch(() => {});
  await browser.close();
}
