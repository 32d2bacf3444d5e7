# control_page.py -- drives the status page of a baton with http.control in
# Debian's headless Chromium through cdp.py (the DevTools protocol over a
# pipe, Python 3 standard library only): the same steps and assertions as
# control_page.js, for a machine without puppeteer-core (test_page_control.sh).
#   python3 control_page.py URL OPERATE_TOKEN READ_TOKEN NODE
# Prints one line per step; exits non-zero with the reason on the first
# failure.
import json
import os
import signal
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Cdp, CdpError, Page  # noqa: E402

REASON = '<script>window.pwned=1</script> freeze <b>now</b>'


class Failure(Exception):
    pass


def step(m):
    print('ok: ' + m, flush=True)


def js(v):
    return json.dumps(v)


def click(page, sel):
    """el.click() on the first match of sel; a missing element is a failure."""
    if not page.evaluate('(() => { const e = document.querySelector(%s); if (!e) return false; '
                         'e.click(); return true; })()' % js(sel)):
        raise Failure('no element for ' + sel)


def type_into(page, sel, text):
    """Sets the input's value and tells the page, as typing would."""
    if not page.evaluate('(() => { const e = document.querySelector(%s); if (!e) return false; '
                         'e.focus(); e.value += %s; '
                         "e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()"
                         % (js(sel), js(text))):
        raise Failure('no element for ' + sel)


def click_until(page, sel, expr, what):
    """Clicks sel until expr holds: the page swaps its body every 2 s, and a
    click landing on the element just replaced reaches no handler."""
    for _ in range(20):
        click(page, sel)
        if page.wait_for(expr, timeout=1.5):
            return
    raise Failure('clicking ' + sel + ' never gave ' + what)


def wait(page, expr, what):
    if page.wait_for(expr, timeout=15):
        return
    try:
        msg = page.evaluate("(document.querySelector('#msg') || {}).textContent || ''")
    except CdpError:
        msg = ''
    raise Failure('timed out waiting for ' + what + (' (the page says: ' + msg + ')' if msg else ''))


def count(page, sel):
    return page.evaluate('document.querySelectorAll(%s).length' % js(sel))


def scenario(page, url, operate, read, node):
    dialogs = []

    def on_dialog(p):  # in the reader thread: answer without waiting
        dialogs.append(p.get('message'))
        page.post('Page.handleJavaScriptDialog', {'accept': True, 'promptText': REASON})
    page.on('Page.javascriptDialogOpening', on_dialog)
    sent = []  # the headers of every request, names in lower case
    page.on('Network.requestWillBeSent',
            lambda p: sent.append({k.lower(): v for k, v in p['request']['headers'].items()}))
    # The headers as sent on the wire (cookies are only there).
    page.on('Network.requestWillBeSentExtraInfo',
            lambda p: sent.append({k.lower(): v for k, v in p['headers'].items()}))

    # Without a token: the page asks for one, shows no data and no button.
    status = page.navigate(url + '/')
    if status != 401:
        raise Failure('first load: %s' % status)
    if not count(page, '#page[data-login]'):
        raise Failure('no login shell')
    if count(page, 'button[data-act=trigger]'):
        raise Failure('buttons without a token')
    step('without a token: 401 and a request for one')

    # A read token: the jobs and their runs links, no buttons.
    type_into(page, '#token', read)
    click(page, 'button[data-act=login]')
    wait(page, "document.querySelector('#page[data-role=read] #jobs')", 'the read page')
    if count(page, 'button[data-act=trigger], button[data-act=step-down]'):
        raise Failure('buttons with a read token')
    if not page.evaluate("sessionStorage.getItem('baton-token')"):
        raise Failure('token not in sessionStorage')
    if page.send('Network.getCookies')['cookies']:
        raise Failure('a cookie was set')
    step('read token: no buttons, token in sessionStorage, no cookie')

    # An operate token: the buttons.
    click(page, 'button[data-act=logout]')
    wait(page, "document.querySelector('#page[data-login]')", 'the login shell again')
    type_into(page, '#token', operate)
    click(page, 'button[data-act=login]')
    wait(page, "document.querySelector('#page[data-role=operate] button[data-act=trigger][data-job=slow]')",
         'the operate page')
    if not count(page, '#leader button[data-act=step-down]'):
        raise Failure('no Step down beside the leader')
    step('operate token: Run now, Pause, Step down shown')

    # Run now: the run appears under Running now with its node and elapsed time.
    click_until(page, 'button[data-act=trigger][data-job=slow]',
                "/trigger slow: done/.test(document.querySelector('#msg').textContent)", 'the trigger done')
    wait(page, "(() => { const t = document.querySelector('#running'); "
               "return t && t.tagName === 'TABLE' && [...t.rows].some((r) => r.cells[0].textContent === 'slow' "
               "&& r.cells[1].textContent === %s && /\\d/.test(r.cells[4].textContent)); })()" % js(node),
         'the run under Running now')
    if not [h for h in sent if h.get('authorization') == 'Bearer ' + operate]:
        raise Failure('no request carried the Authorization header')
    if [h for h in sent if h.get('cookie')]:
        raise Failure('a request carried a cookie')
    step('Run now: the run shows on node ' + node + ' with its elapsed time')

    # Pause with a reason holding markup: shown as text, never run.
    click_until(page, 'button[data-act=pause][data-job=hello]',
                "/pause hello: done/.test(document.querySelector('#msg').textContent)", 'the pause done')
    wait(page, "document.querySelector('#paused li')", 'the paused list')
    if not dialogs:
        raise Failure('Pause asked no reason')
    li = page.evaluate("(() => { const e = document.querySelector('#paused li'); return {text: e.textContent, "
                       "scripts: e.querySelectorAll('script').length + e.querySelectorAll('b').length - 1}; })()")
    if REASON not in li['text']:
        raise Failure('reason not shown as text: ' + li['text'])
    if li['scripts'] != 0:  # the one <b> is the job's name
        raise Failure('the reason became markup')
    if page.evaluate('window.pwned'):
        raise Failure('the reason ran')
    if not count(page, 'button[data-act=resume][data-job=hello]'):
        raise Failure('no Resume on the paused job')
    step('Pause: the reason with <script> shown as text; Resume offered')

    # The runs of a job, and a run's output with markup shown as text.
    wait(page, "document.querySelector('#jobs') && /ok|failed/.test(document.querySelector('#jobs').textContent)",
         'a last run')
    click_until(page, 'a[data-act=runs][data-job=slow]',
                "document.querySelector('#runlist tr button[data-act=output]')", 'the runs list')
    click_until(page, '#runlist tr button[data-act=output]',
                "document.querySelector('#output') && "
                "document.querySelector('#output').textContent.includes('<i>slow</i>')", 'the output')
    if count(page, '#output i'):
        raise Failure('the output became markup')
    step('runs and output: listed, output with <i> shown as text')

    click_until(page, 'button[data-act=resume][data-job=hello]',
                "/resume hello: done/.test(document.querySelector('#msg').textContent)", 'the resume done')
    wait(page, "!document.querySelector('#paused')", 'the job resumed')
    step('Resume: the job is no longer paused')


class Overtime(Exception):
    pass


def main():
    if len(sys.argv) != 5:
        sys.stderr.write('usage: python3 control_page.py URL OPERATE_TOKEN READ_TOKEN NODE\n')
        return 64
    url, operate, read, node = sys.argv[1:]

    def overtime(*_):
        raise Overtime()
    signal.signal(signal.SIGALRM, overtime)
    signal.alarm(90)
    cdp = None
    try:
        cdp = Cdp()
        scenario(Page(cdp), url, operate, read, node)
        return 0
    except Overtime:
        sys.stderr.write('FAIL: 90 s\n')
        return 3
    except (Failure, CdpError, OSError) as e:
        sys.stderr.write('FAIL: %s\n' % e)
        return 1
    finally:
        signal.alarm(0)
        if cdp:
            cdp.close()


if __name__ == '__main__':
    sys.exit(main())
