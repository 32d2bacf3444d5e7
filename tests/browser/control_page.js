// control_page.js -- drives the status page of a baton with http.control in
// Debian's headless Chromium through puppeteer-core (test_page_control.sh).
//   node control_page.js URL OPERATE_TOKEN READ_TOKEN NODE
// Prints one line per step; exits non-zero with the reason on the first
// failure.
const puppeteer = require('puppeteer-core');
const [url, operate, read, node] = process.argv.slice(2);
const step = (m) => console.log('ok: ' + m);
// Clicks sel until fn holds: the page swaps its body every 2 s, and a click
// landing on the element just replaced reaches no handler.
async function clickUntil(page, sel, fn, what, ...args) {
  for (let i = 0; i < 20; i++) {
    await page.click(sel);
    const done = await page.waitForFunction(fn, { timeout: 1500, polling: 100 }, ...args).then(() => true, () => false);
    if (done) return;
  }
  throw new Error('clicking ' + sel + ' never gave ' + what);
}
const wait = (page, fn, what, ...args) =>
  page.waitForFunction(fn, { timeout: 15000, polling: 100 }, ...args).catch(async () => {
    const msg = await page.$eval('#msg', (e) => e.textContent).catch(() => '');
    throw new Error('timed out waiting for ' + what + (msg ? ' (the page says: ' + msg + ')' : ''));
  });

(async () => {
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  const timer = setTimeout(() => { console.error('FAIL: 90 s'); process.exit(3); }, 90000);
  try {
    const page = await browser.newPage();
    const dialogs = [];
    page.on('dialog', async (d) => { dialogs.push(d.message()); await d.accept('<script>window.pwned=1</script> freeze <b>now</b>'); });
    const sent = [];
    page.on('request', (r) => sent.push(r.headers()));

    // Without a token: the page asks for one, shows no data and no button.
    const first = await page.goto(url + '/', { waitUntil: 'load' });
    if (first.status() !== 401) throw new Error('first load: ' + first.status());
    if (!(await page.$('#page[data-login]'))) throw new Error('no login shell');
    if ((await page.$$('button[data-act=trigger]')).length) throw new Error('buttons without a token');
    step('without a token: 401 and a request for one');

    // A read token: the jobs and their runs links, no buttons.
    await page.type('#token', read);
    await page.click('button[data-act=login]');
    await wait(page, () => document.querySelector('#page[data-role=read] #jobs'), 'the read page');
    if ((await page.$$('button[data-act=trigger], button[data-act=step-down]')).length)
      throw new Error('buttons with a read token');
    if (!(await page.evaluate(() => sessionStorage.getItem('baton-token'))))
      throw new Error('token not in sessionStorage');
    if ((await page.cookies()).length) throw new Error('a cookie was set');
    step('read token: no buttons, token in sessionStorage, no cookie');

    // An operate token: the buttons.
    await page.click('button[data-act=logout]');
    await page.waitForSelector('#page[data-login]', { timeout: 15000 });
    await page.type('#token', operate);
    await page.click('button[data-act=login]');
    await wait(page, () => document.querySelector('#page[data-role=operate] button[data-act=trigger][data-job=slow]'), 'the operate page');
    if (!(await page.$('#leader button[data-act=step-down]'))) throw new Error('no Step down beside the leader');
    step('operate token: Run now, Pause, Step down shown');

    // Run now: the run appears under Running now with its node and elapsed time.
    await clickUntil(page, 'button[data-act=trigger][data-job=slow]', () => /trigger slow: done/.test(document.querySelector('#msg').textContent), 'the trigger done');
    await wait(page, (n) => {
      const t = document.querySelector('#running');
      return t && t.tagName === 'TABLE' && [...t.rows].some((r) => r.cells[0].textContent === 'slow' && r.cells[1].textContent === n && /\d/.test(r.cells[4].textContent));
    }, 'the run under Running now', node);
    const auth = sent.filter((h) => h.authorization === 'Bearer ' + operate).length;
    if (auth === 0) throw new Error('no request carried the Authorization header');
    if (sent.some((h) => h.cookie)) throw new Error('a request carried a cookie');
    step('Run now: the run shows on node ' + node + ' with its elapsed time');

    // Pause with a reason holding markup: shown as text, never run.
    await clickUntil(page, 'button[data-act=pause][data-job=hello]', () => /pause hello: done/.test(document.querySelector('#msg').textContent), 'the pause done');
    await wait(page, () => document.querySelector('#paused li'), 'the paused list');
    if (!dialogs.length) throw new Error('Pause asked no reason');
    const li = await page.$eval('#paused li', (e) => ({ text: e.textContent, scripts: e.querySelectorAll('script').length + e.querySelectorAll('b').length - 1 /* the job's name */ }));
    if (!li.text.includes('<script>window.pwned=1</script> freeze <b>now</b>')) throw new Error('reason not shown as text: ' + li.text);
    if (li.scripts !== 0) throw new Error('the reason became markup');
    if (await page.evaluate(() => window.pwned)) throw new Error('the reason ran');
    if (!(await page.$('button[data-act=resume][data-job=hello]'))) throw new Error('no Resume on the paused job');
    step('Pause: the reason with <script> shown as text; Resume offered');

    // The runs of a job, and a run's output with markup shown as text.
    await wait(page, () => document.querySelector('#jobs') && /ok|failed/.test(document.querySelector('#jobs').textContent), 'a last run');
    await clickUntil(page, 'a[data-act=runs][data-job=slow]', () => document.querySelector('#runlist tr button[data-act=output]'), 'the runs list');
    await clickUntil(page, '#runlist tr button[data-act=output]', () => document.querySelector('#output') && document.querySelector('#output').textContent.includes('<i>slow</i>'), 'the output');
    if (await page.$('#output i')) throw new Error('the output became markup');
    step('runs and output: listed, output with <i> shown as text');

    await clickUntil(page, 'button[data-act=resume][data-job=hello]', () => /resume hello: done/.test(document.querySelector('#msg').textContent), 'the resume done');
    await wait(page, () => !document.querySelector('#paused'), 'the job resumed');
    step('Resume: the job is no longer paused');
  } finally {
    clearTimeout(timer);
    await browser.close();
  }
})().catch((e) => { console.error('FAIL: ' + e.message); process.exit(1); });
