// flame_check.mjs: drives `heapprof flame` pages in headless Chromium with
// playwright-core (tests/cli/flame.sh installs it and passes the cases).
//   node flame_check.mjs CASES.json
// CASES.json: {chromium, shots, pages: [{name, file, kind, ...expectations}],
//              speedscope: {index, files: [..]} | null}
// kind "plain": renders (frames, root width), sample-type switch changes the
//   total, search highlights exactly the matching frames with the expected
//   share, zoom and reset, tooltip, screenshot;
// kind "diff": legend, new/base totals, grew frames red, screenshot;
// kind "escape": hostile names stay text (no dialog, no injected element).
// Every page: no console error, no page error, no request but file://.
// Prints PASS name / FAIL name / SKIP name: why; exit status 0.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(cases.modules + '/');
const { chromium } = require('playwright-core');

const pass = (n) => console.log(`PASS ${n}`);
const fail = (n, why) => { console.log(`FAIL ${n}`); console.error(`  ${n}: ${why}`); };
const check = (n, ok, why) => (ok ? pass(n) : fail(n, why));
const near = (a, b, tol) => Math.abs(a - b) <= tol;

const browser = await chromium.launch({
  executablePath: cases.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync'],
});

async function openPage(name, url, opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 700 } });
  const page = await ctx.newPage();
  const log = { errors: [], requests: [], dialogs: 0 };
  page.on('console', (m) => { if (m.type() === 'error') log.errors.push(m.text()); });
  page.on('pageerror', (e) => log.errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith('file:')) log.requests.push(r.url()); });
  page.on('dialog', (d) => { log.dialogs++; d.dismiss(); });
  await page.goto(url);
  if (!opts.noWait) await page.waitForSelector('#svg g.frame', { timeout: 10000 }).catch(() => {});
  return { page, ctx, log };
}

function finish(name, log, allowErrors) {
  if (!allowErrors)
    check(`${name}_no_console_errors`, log.errors.length === 0, log.errors.join(' | '));
  check(`${name}_no_network`, log.requests.length === 0, log.requests.join(' '));
}

const totalOf = (page) => page.$eval('#total', (e) => [e.textContent, +e.dataset.total]);
const frames = (page) => page.$$eval('#svg g.frame', (gs) => gs.map((g) => {
  const r = g.querySelector('rect');
  return { name: g.dataset.name, x: +r.getAttribute('x'), w: +r.getAttribute('width'),
    y: +r.getAttribute('y'), fill: r.getAttribute('fill'), match: g.classList.contains('match'),
    anc: g.classList.contains('anc') };
}));

async function plain(c) {
  const n = c.name;
  const { page, ctx, log } = await openPage(n, 'file://' + c.file);
  const fr = await frames(page);
  const svgW = await page.$eval('#svg', (s) => s.viewBox.baseVal.width);
  check(`${n}_renders`, fr.length >= c.minFrames, `${fr.length} frames`);
  const root = fr.find((f) => f.name === 'all');
  check(`${n}_root_full_width`, root && near(root.w, svgW, 0.5) && root.x === 0,
    `root ${JSON.stringify(root)} svg width ${svgW}`);
  const names = new Set(fr.map((f) => f.name));
  const missing = c.expectFrames.filter((f) => !names.has(f));
  check(`${n}_frames_named`, missing.length === 0, `missing ${missing}`);
  // the default type and its total
  let [text, total] = await totalOf(page);
  check(`${n}_default_type`, (await page.$eval('#type', (s) => +s.value)) === c.defaultType,
    `select at ${await page.$eval('#type', (s) => s.value)}`);
  check(`${n}_total`, total === c.totals[c.defaultType],
    `shown ${total} (${text}), want ${c.totals[c.defaultType]}`);
  // the switch: every other type shows its own total
  let ok = true, why = '';
  for (let t = 0; t < c.totals.length; t++) {
    await page.selectOption('#type', String(t));
    const [tx, tot] = await totalOf(page);
    if (tot !== c.totals[t] || !tx.startsWith(c.typeNames[t])) {
      ok = false; why += `type ${t}: ${tot} "${tx}" want ${c.totals[t]}; `;
    }
  }
  check(`${n}_type_switch`, ok && c.totals.length > 1, why || 'one type only');
  await page.selectOption('#type', String(c.defaultType));
  // search: exactly the matching frames, the share of the stacks that hold one
  await page.fill('#search', c.search);
  await page.waitForFunction(() => document.querySelector('#matched').textContent !== '');
  const fs2 = await frames(page);
  const re = new RegExp(c.search, 'i');
  const wrong = fs2.filter((f) => f.name !== 'all' && f.match !== re.test(f.name));
  const nmatch = fs2.filter((f) => f.match).length;
  check(`${n}_search_highlights`, wrong.length === 0 && nmatch > 0,
    `${nmatch} highlighted, wrong: ${wrong.map((f) => f.name).slice(0, 5)}`);
  const share = await page.$eval('#matched', (e) => +e.dataset.share);
  check(`${n}_search_share`, near(share, c.searchShare, 1e-9),
    `share ${share}, want ${c.searchShare}`);
  const shot = `${cases.shots}/${n}_search.png`;
  await page.screenshot({ path: shot });
  await page.fill('#search', '');
  await page.waitForFunction(() => document.querySelector('#matched').textContent === '');
  // zoom: click a frame, it fills the width, ancestors stay, reset
  const before = (await frames(page)).find((f) => f.name === c.zoomTo);
  await page.click(`#svg g.frame[data-name="${c.zoomTo}"] rect`, { position: { x: 2, y: 5 } });
  const after = await frames(page);
  const z = after.find((f) => f.name === c.zoomTo && !f.anc);
  const ancs = after.filter((f) => f.anc).map((f) => f.name);
  check(`${n}_zoom`, before && z && before.w < svgW - 1 && near(z.w, svgW, 0.5) &&
    ancs.includes('all') && !(await page.$eval('#reset', (b) => b.disabled)),
    `before ${JSON.stringify(before)} after ${JSON.stringify(z)} ancestors ${ancs}`);
  await page.screenshot({ path: `${cases.shots}/${n}_zoom.png` });
  await page.click('#reset');
  const back = (await frames(page)).find((f) => f.name === c.zoomTo);
  check(`${n}_zoom_reset`, back && near(back.w, before.w, 0.01) &&
    (await page.$eval('#reset', (b) => b.disabled)), `after reset ${JSON.stringify(back)}`);
  // tooltip
  await page.hover(`#svg g.frame[data-name="${c.zoomTo}"] rect`, { position: { x: 2, y: 5 } });
  const tip = await page.$eval('#tip', (t) => (t.hidden ? '' : t.textContent));
  check(`${n}_tooltip`, tip.startsWith(c.zoomTo) && /%/.test(tip), `tooltip "${tip}"`);
  await page.mouse.move(5, 5);
  await page.screenshot({ path: `${cases.shots}/${n}.png` });
  finish(n, log);
  await ctx.close();
}

async function diff(c) {
  const n = c.name;
  const { page, ctx, log } = await openPage(n, 'file://' + c.file);
  const fr = await frames(page);
  check(`${n}_renders`, fr.length >= c.minFrames, `${fr.length} frames`);
  check(`${n}_legend`, await page.$eval('#legend', (e) => !e.hidden), 'no legend');
  const [text, total] = await totalOf(page);
  check(`${n}_total`, total === c.delta && text.includes('new') && text.includes('base'),
    `shown ${total} "${text}", want ${c.delta}`);
  if (c.grew.length) {
    const red = fr.filter((f) => c.grew.includes(f.name));
    const isRed = (f) => { const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(f.fill); return m && +m[1] > +m[3]; };
    check(`${n}_grew_red`, red.length > 0 && red.every(isRed),
      JSON.stringify(red.map((f) => [f.name, f.fill])));
  }
  if (c.shrank.length) {
    const blue = fr.filter((f) => c.shrank.includes(f.name));
    const isBlue = (f) => { const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(f.fill); return m && +m[3] > +m[1]; };
    check(`${n}_shrank_blue`, blue.length > 0 && blue.every(isBlue),
      JSON.stringify(blue.map((f) => [f.name, f.fill])));
  }
  await page.selectOption('#width', 'new');
  const [, t2] = await totalOf(page);
  check(`${n}_width_switch`, t2 === c.delta && (await frames(page)).length > 0, `total ${t2}`);
  await page.selectOption('#width', 'abs');
  await page.screenshot({ path: `${cases.shots}/${n}.png` });
  finish(n, log);
  await ctx.close();
}

async function escape(c) {
  const n = c.name;
  const { page, ctx, log } = await openPage(n, 'file://' + c.file);
  const names = (await frames(page)).map((f) => f.name);
  check(`${n}_names_are_text`, c.names.every((x) => names.includes(x)),
    `frames ${JSON.stringify(names)}`);
  const injected = await page.$$eval('script', (s) => s.length);
  check(`${n}_no_injection`, log.dialogs === 0 && injected === 2 &&
    (await page.$$('img, iframe')).length === 0, `${log.dialogs} dialogs, ${injected} scripts`);
  finish(n, log);
  await ctx.close();
}

async function speedscope(s) {
  for (const f of s.files) {
    const n = `speedscope_loads_${f.name}`;
    const { page, ctx, log } = await openPage(n, 'file://' + s.index, { noWait: true });
    try {
      await page.waitForSelector('input[type=file]', { state: 'attached', timeout: 10000 });
      await page.setInputFiles('input[type=file]', f.path);
      // loaded: the profile's flame chart canvas and its name in the toolbar
      await page.waitForFunction((want) => document.body.innerText.includes(want) &&
        document.querySelectorAll('canvas').length > 0, f.expectText, { timeout: 15000 });
      const body = await page.evaluate(() => document.body.innerText);
      check(n, !/Something went wrong|Unrecognized format|Failed to/i.test(body),
        body.slice(0, 300));
      await page.screenshot({ path: `${cases.shots}/${n}.png` });
    } catch (e) {
      const body = await page.evaluate(() => document.body.innerText).catch(() => '');
      fail(n, `${e.message.split('\n')[0]} | page: ${body.slice(0, 200)}`);
    }
    check(`${n}_no_network`, log.requests.length === 0, log.requests.join(' '));
    await ctx.close();
  }
}

try {
  for (const c of cases.pages) {
    try {
      if (c.kind === 'plain') await plain(c);
      else if (c.kind === 'diff') await diff(c);
      else await escape(c);
    } catch (e) {
      fail(c.name, e.stack || String(e));
    }
  }
  if (cases.speedscope) await speedscope(cases.speedscope);
} finally {
  await browser.close();
}
