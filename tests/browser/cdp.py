# cdp.py -- a small Chrome DevTools Protocol client over Chromium's
# --remote-debugging-pipe, Python 3 standard library only (test-only; used by
# control_page.py when puppeteer-core is not installed).
#
# Chromium reads CDP messages (JSON, each ended by a NUL byte) from its fd 3
# and writes its own to fd 4. Cdp starts /usr/bin/chromium headless with a
# throwaway profile, a reader thread splits what it writes into replies (by
# id) and events (kept in order, and passed to handlers registered with on()),
# and close() ends it by its pid. Every wait is bounded.
# Page is one tab: a target attached with flatten=true, all of its commands
# scoped by its sessionId.
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time


class CdpError(Exception):
    """A command answered with an error, a wait that timed out, or Chromium gone."""


class Cdp:
    ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
            '--no-first-run', '--remote-debugging-pipe']

    def __init__(self, chromium='/usr/bin/chromium'):
        self._profile = tempfile.mkdtemp(prefix='baton-cdp-')
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds_3_and_4():
            # Duplicates first, so that dup2 onto 3 cannot close the other
            # end when os.pipe() happened to return 3 or 4.
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self._proc = subprocess.Popen(
            [chromium] + self.ARGS + ['--user-data-dir=' + self._profile, 'about:blank'],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds_3_and_4, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._lock = threading.Condition()
        self._write_lock = threading.Lock()
        self._next_id = 0
        self._replies = {}
        self.events = []  # (method, params, sessionId), in arrival order
        self._handlers = {}
        self._gone = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # The reader thread: NUL-ended messages to replies and events.
    def _read(self):
        buf = b''
        try:
            while True:
                chunk = os.read(self._from_chrome, 65536)
                if not chunk:
                    break
                buf += chunk
                while b'\0' in buf:
                    raw, buf = buf.split(b'\0', 1)
                    self._dispatch(json.loads(raw))
        except (OSError, ValueError) as e:
            self._set_gone('reading from chromium: %s' % e)
        self._set_gone('chromium closed its pipe (exit status %s)' % self._proc.poll())

    def _set_gone(self, why):
        with self._lock:
            if self._gone is None:
                self._gone = why
            self._lock.notify_all()

    def _dispatch(self, msg):
        if 'id' in msg:
            with self._lock:
                self._replies[msg['id']] = msg
                self._lock.notify_all()
            return
        method, params, session = msg.get('method'), msg.get('params', {}), msg.get('sessionId')
        with self._lock:
            self.events.append((method, params, session))
            self._lock.notify_all()
        for fn in self._handlers.get(method, []):
            fn(params, session)  # runs in the reader thread: may post(), never send()

    def on(self, method, fn):
        """Calls fn(params, sessionId) in the reader thread for each event `method`."""
        self._handlers.setdefault(method, []).append(fn)

    def post(self, method, params=None, session=None):
        """Writes one command and returns its id without waiting for the reply."""
        with self._lock:
            self._next_id += 1
            mid = self._next_id
        msg = {'id': mid, 'method': method, 'params': params or {}}
        if session:
            msg['sessionId'] = session
        data = json.dumps(msg).encode() + b'\0'
        with self._write_lock:
            while data:
                data = data[os.write(self._to_chrome, data):]
        return mid

    def _wait(self, test, timeout, what):
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                got = test()
                if got is not None:
                    return got
                if self._gone is not None:
                    raise CdpError('%s: %s' % (what, self._gone))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CdpError('%s: no answer in %g s' % (what, timeout))
                self._lock.wait(left)

    def send(self, method, params=None, session=None, timeout=15):
        """Sends one command and returns its result; raises CdpError on an error reply."""
        mid = self.post(method, params, session)
        reply = self._wait(lambda: self._replies.pop(mid, None), timeout, method)
        if 'error' in reply:
            raise CdpError('%s: %s' % (method, reply['error'].get('message', reply['error'])))
        return reply.get('result', {})

    def mark(self):
        """The number of events so far: wait_event(since=mark()) sees only later ones."""
        with self._lock:
            return len(self.events)

    def wait_event(self, method, pred=lambda p: True, session=None, since=0, timeout=15):
        """Returns the params of the first event `method` (after `since`) that pred accepts."""
        def find():
            for m, p, s in self.events[since:]:
                if m == method and (session is None or s == session) and pred(p):
                    return p
            return None
        return self._wait(find, timeout, 'waiting for ' + method)

    def close(self):
        """Closes the browser, then ends what is left of it by its pid (and group)."""
        if self._proc.poll() is None and self._gone is None:
            try:
                self.post('Browser.close')
            except OSError:
                pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        try:  # its helpers (zygote, renderers) share the session it leads
            os.killpg(self._proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)


class Page:
    """One tab, its commands scoped by its sessionId; Page, Runtime and Network enabled."""

    def __init__(self, cdp):
        self.cdp = cdp
        self.target = cdp.send('Target.createTarget', {'url': 'about:blank'})['targetId']
        self.session = cdp.send('Target.attachToTarget',
                                {'targetId': self.target, 'flatten': True})['sessionId']
        for domain in ('Page', 'Runtime', 'Network'):
            self.send(domain + '.enable')

    def send(self, method, params=None, timeout=15):
        return self.cdp.send(method, params, self.session, timeout)

    def on(self, method, fn):
        """fn(params) for each event `method` of this tab, in the reader thread."""
        self.cdp.on(method, lambda p, s: fn(p) if s == self.session else None)

    def post(self, method, params=None):
        return self.cdp.post(method, params, self.session)

    def navigate(self, url, timeout=15):
        """Loads url up to its load event; returns the HTTP status of its document."""
        since = self.cdp.mark()
        nav = self.send('Page.navigate', {'url': url})
        if nav.get('errorText'):
            raise CdpError('navigating to %s: %s' % (url, nav['errorText']))
        loader = nav.get('loaderId')
        resp = self.cdp.wait_event(
            'Network.responseReceived',
            lambda p: p.get('type') == 'Document' and p.get('loaderId') == loader,
            self.session, since, timeout)
        self.cdp.wait_event('Page.loadEventFired', session=self.session, since=since,
                            timeout=timeout)
        return resp['response']['status']

    def evaluate(self, expr, timeout=15):
        """The value of a JavaScript expression (promises awaited); raises on an exception."""
        r = self.send('Runtime.evaluate', {'expression': expr, 'awaitPromise': True,
                                           'returnByValue': True}, timeout)
        if 'exceptionDetails' in r:
            d = r['exceptionDetails']
            raise CdpError('%s: %s' % (expr, d.get('exception', {}).get('description', d.get('text'))))
        return r['result'].get('value')

    def wait_for(self, expr, timeout=15, poll=0.1):
        """Evaluates expr every poll s until it is truthy (in JavaScript: an
        element is, though its value by JSON is not); True, or False at
        timeout. An evaluation that fails (the page being replaced) counts as
        false."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.evaluate('!!(%s)' % expr, max(1, deadline - time.monotonic())):
                    return True
            except CdpError:
                if self.cdp._gone is not None:
                    raise
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)
