// The console page in Debian's chromium, headless, driven by playwright-core:
// open it with the token, add a policy through the form (by keyboard), see it
// listed and enforced by nginx, submit an invalid one and see the server's
// message beside the field and nothing changed, delete the policy. Prints
// "ok - ..." / "not ok - ..." lines (tests/integration/test_console.sh counts
// them) and saves a screenshot for a person to look at.
//
//   FC_URL=http://127.0.0.1:PORT/ FC_TOKEN=... FC_WEB=http://127.0.0.1:PORT2 FC_SHOT=out.png node console.mjs
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { FC_URL, FC_TOKEN, FC_WEB, FC_SHOT } = process.env;
let failures = 0;

function check(what, ok) {
  console.log((ok ? 'ok - ' : 'not ok - ') + what);
  if (!ok) failures++;
}

async function nginxCodes(uid, n) {
  const codes = [];
  for (let i = 0; i < n; i++) codes.push((await fetch(`${FC_WEB}/?uid=${uid}`)).status);
  return codes.join(' ');
}

async function apiIds(page) {
  return page.evaluate(async (token) => {
    const r = await fetch('/api/policies', { headers: { Authorization: 'Bearer ' + token } });
    return (await r.json()).policies.map((p) => p.id);
  }, FC_TOKEN);
}

const profile = mkdtempSync(join(tmpdir(), 'fc-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1366, height: 860 }, // a laptop screen
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = browser.pages()[0] || await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Console errors other than the browser's note on the 400 the test provokes.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().includes('status of 400')) errors.push(m.text());
  });

  await page.goto(`${FC_URL}#token=${FC_TOKEN}`);
  await page.locator('#app').waitFor({ state: 'visible', timeout: 10000 });
  check('the page opens with the token and connects', (await page.locator('#status').textContent()).startsWith('Connected'));
  check('the token left the address bar', !page.url().includes('token='));

  // Add a policy by keyboard: type, Tab to the next field, Enter submits.
  await page.locator('#p-id').focus();
  await page.keyboard.type('41');
  await page.keyboard.press('Tab');
  await page.keyboard.type('uid=u41');
  await page.keyboard.press('Tab');
  await page.keyboard.type('2/m');
  await page.keyboard.press('Enter');
  const row = page.locator('#policies tbody tr[data-id="41"]');
  await row.waitFor({ timeout: 5000 });
  check('the new policy is listed', (await row.textContent()).includes('uid=u41'));
  let codes = '';
  for (let i = 0; i < 20 && codes !== '200 200 429'; i++) {
    codes = await nginxCodes('u41', 3);
    if (codes !== '200 200 429') await new Promise((r) => setTimeout(r, 50));
  }
  check(`... and enforced by nginx: ${codes}`, codes === '200 200 429');

  // Traffic for the counters and the chart: u41 is over its limit now.
  for (let i = 0; i < 15; i++) {
    await nginxCodes('u41', 1);
    await page.waitForTimeout(200);
  }
  const denied = await row.locator('.denied').textContent();
  check(`live counters show the refusals (denied/s: ${denied})`, Number(denied) > 0);

  // An invalid one: the server's message beside the rates field, nothing stored.
  await page.fill('#p-id', '42');
  await page.fill('#p-match', 'uid=u42');
  await page.fill('#p-rates', '10/x');
  await page.click('#policy-save');
  const err = page.locator('#e-rates');
  await err.filter({ hasText: 'unit' }).waitFor({ timeout: 5000 });
  const msg = await err.textContent();
  check(`an invalid rate shows the server's message by the field: ${msg}`,
    msg === 'policy 42: rate "10/x": unit must be one of s, m, h, d');
  check('... the field is marked invalid', (await page.getAttribute('#p-rates', 'aria-invalid')) === 'true');
  check('... and nothing was added', !(await apiIds(page)).includes(42));
  await page.screenshot({ path: FC_SHOT, fullPage: true });
  check(`screenshot saved: ${FC_SHOT}`, true);
  await page.click('#policy-cancel').catch(() => {});
  await page.fill('#p-id', '');
  await page.fill('#p-match', '');
  await page.fill('#p-rates', '');

  // A concurrency cap and no rate: listed with its cap, its requests in flight shown live.
  await page.fill('#p-id', '43');
  await page.fill('#p-match', 'uid=u43');
  await page.fill('#p-concurrency', '2');
  await page.click('#policy-save');
  const crow = page.locator('#policies tbody tr[data-id="43"]');
  await crow.waitFor({ timeout: 5000 });
  check('a policy with --concurrency 2 and no rate is listed with its cap',
    (await crow.textContent()).includes('at most 2 in flight'));
  await crow.locator('.inflight').filter({ hasText: /^0$/ }).waitFor({ timeout: 5000 });
  check('... and none of its requests in flight', (await crow.locator('.inflight').textContent()) === '0');
  await crow.getByRole('button', { name: 'Delete policy 43' }).click();
  await crow.getByRole('button', { name: 'Delete policy 43' }).click();
  await crow.waitFor({ state: 'detached', timeout: 5000 });

  // The allow list: add an entry with a note, a bad one refused by the field, delete.
  await page.fill('#a-allow', '198.18.0.9');
  await page.fill('#a-note', 'partner');
  await page.click('#allow-form button[type="submit"]');
  const arow = page.locator('#allows tbody tr[data-allow="198.18.0.9"]');
  await arow.waitFor({ timeout: 5000 });
  check('an allow entry is listed with its note', (await arow.textContent()).includes('partner'));
  await page.fill('#a-allow', '198.18.0.9/8');
  await page.click('#allow-form button[type="submit"]');
  const aerr = page.locator('#e-allow');
  await aerr.filter({ hasText: 'host bits' }).waitFor({ timeout: 5000 });
  check(`a bad allow entry shows the server's message by the field: ${await aerr.textContent()}`, true);
  await arow.getByRole('button', { name: 'Delete the allow entry 198.18.0.9' }).click();
  await arow.getByRole('button', { name: 'Delete the allow entry 198.18.0.9' }).click();
  await arow.waitFor({ state: 'detached', timeout: 5000 });
  check('the allow entry is deleted', true);

  // A key's value is the workers' bytes: markup in it is shown as text.
  const key = page.locator('#keys tbody td', { hasText: '"<b>x</b>"' });
  await key.waitFor({ timeout: 5000 });
  check('a key kept by value is listed by it, as text', (await key.textContent()) === '"<b>x</b>"');
  check('... none of it made into markup', (await page.locator('#keys tbody b').count()) === 0);

  // The fleet panel, from the agent's status: its mode and a fleet policy's use; names as text.
  const fleetRow = page.locator('#fleet-policies tbody tr', { hasText: '77' });
  await fleetRow.waitFor({ timeout: 5000 });
  check('the fleet panel shows the mode and why', (await page.locator('#fleet-mode').textContent())
    .includes('degraded mode (clock 812 ms from Redis (max 500))'));
  check('... a fleet policy: 61 of 100/d used, 5 held here, 1 key asking',
    (await fleetRow.locator('td').allTextContents()).join('|') === '77|61|100/d|20|5|1');
  check('... a node named with markup shown as text, not markup',
    (await page.locator('#fleet-nodes').textContent()).includes('<b>n1</b> (0.25, degraded, heard 0.3 s ago)') &&
    (await page.locator('#fleet b').count()) === 0);

  // Delete, by keyboard: the button asks once more.
  const del = row.getByRole('button', { name: 'Delete policy 41' });
  await del.focus();
  await page.keyboard.press('Enter');
  await page.keyboard.press('Enter');
  await row.waitFor({ state: 'detached', timeout: 5000 });
  check('the policy is deleted', !(await apiIds(page)).includes(41));
  check(`no script errors (${errors.join('; ')})`, errors.length === 0);
} catch (e) {
  check(`the browser test ran to its end (${e.message.split('\n')[0]})`, false);
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);
