/* statuspage.c -- see statuspage.h. Every value from the document is
 * HTML-escaped on its way out (job and node names are restricted, but a
 * heartbeat's fields are whatever a node wrote). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "log.h"
#include "logfmt.h"
#include "statuspage.h"

static const char style[] =
    ":root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--mute:#656d76;--line:#d0d7de;"
    "--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e}"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--mute:#8d96a0;"
    "--line:#30363d;--ok:#3fb950;--warn:#d29922;--bad:#f85149}}"
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);"
    "background:var(--bg);margin:0 auto;max-width:62rem;padding:.8rem 1rem 2rem}"
    "h1{font-size:1.35rem;margin:.2rem 0 .6rem}h2{font-size:1.05rem;margin:1.5rem 0 .4rem}"
    "dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}"
    "dt{color:var(--mute)}dd{margin:0;overflow-wrap:anywhere}"
    ".wrap{overflow-x:auto;-webkit-overflow-scrolling:touch}"
    "table{border-collapse:collapse;min-width:100%}"
    "th,td{text-align:left;padding:.32rem .9rem .32rem 0;border-bottom:1px solid var(--line);"
    "white-space:nowrap;vertical-align:top}"
    "th{color:var(--mute);font-weight:600;font-size:.85rem}"
    ".ok{color:var(--ok)}.warn{color:var(--warn)}.bad{color:var(--bad)}.mute{color:var(--mute)}"
    "code{font:.92em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    "a{color:inherit}footer{margin-top:1.5rem;font-size:.85rem}"
    "#paused{margin:.6rem 0 0;padding-left:1.2rem}"
    "@media (max-width:40rem){.w{display:none}}"; /* a phone: the essential columns */

/* Fetches the page again (with the token, when the tab has one) and swaps
 * in its #page and title, counting the swaps in <body data-refreshed>;
 * says so in the footer when the node does not answer. The controls
 * (statuspage.h): a click on [data-act] logs in or out, lists a job's runs
 * or shows a run's output (written with textContent only), or POSTs a
 * call and refreshes. */
#define SCRIPT_FMT                                                                                 \
    "(function(){var busy=false,n=0,K='baton-token';"                                              \
    "function $(i){return document.getElementById(i);}"                                            \
    "function tok(){try{return sessionStorage.getItem(K)||'';}catch(e){return '';}}"               \
    "function hdr(x){var h=x||{},t=tok();if(t)h.Authorization='Bearer '+t;return h;}"              \
    "function say(m,bad){var e=$('msg');if(e){e.textContent=m;e.className=bad?'bad':'ok';}}"       \
    "function tick(){var p=$('page');if(busy||(p&&p.hasAttribute('data-login')&&!tok()))return;"   \
    "busy=true;fetch(location.pathname,{cache:'no-store',headers:hdr()}).then(function(r){"        \
    "if(r.status==401&&tok()){try{sessionStorage.removeItem(K);}catch(e){}"                        \
    "say('The token was refused: type it again.',true);}"                                          \
    "if(!r.ok&&r.status!=401)throw new Error('HTTP '+r.status);return r.text();}).then("           \
    "function(t){var d=new DOMParser().parseFromString(t,'text/html'),q=d.getElementById('page')," \
    "p=$('page');document.title=d.title;if(q&&p){p.innerHTML=q.innerHTML;"                         \
    "['data-login','data-role'].forEach(function(a){if(q.hasAttribute(a))"                         \
    "p.setAttribute(a,q.getAttribute(a));else p.removeAttribute(a);});}"                           \
    "else{document.body.innerHTML=d.body.innerHTML;}"                                              \
    "document.body.setAttribute('data-refreshed',++n);"                                            \
    "}).catch(function(e){"                                                                        \
    "var f=$('foot');if(f){f.className='bad';"                                                     \
    "f.textContent='This node does not answer ('+e.message+'), '+"                                 \
    "new Date().toLocaleTimeString()+'; trying again.';}}).then(function(){busy=false;});}"        \
    "function call(m,u,b){return fetch(u,{method:m,cache:'no-store',headers:hdr(b?"                \
    "{'Content-Type':'application/json'}:{}),body:b?JSON.stringify(b):undefined}).then("           \
    "function(r){return r.json().then(function(j){if(!r.ok)throw new Error((j&&j.error)||"         \
    "('HTTP '+r.status));return j;});});}"                                                         \
    "function J(j){return '/jobs/'+encodeURIComponent(j);}"                                        \
    "function cell(tr,v){var c=document.createElement('td');c.textContent=v==null?'':String(v);"   \
    "tr.appendChild(c);return c;}"                                                                 \
    "function runs(j){call('GET',J(j)+'/runs?count=10').then(function(d){var x=$('runs'),"         \
    "h=document.createElement('h2'),t=document.createElement('table'),"                            \
    "o=document.createElement('pre');x.textContent='';h.textContent='Recent runs of '+j;"          \
    "t.id='runlist';o.id='output';x.appendChild(h);x.appendChild(t);x.appendChild(o);"             \
    "d.runs.forEach(function(r){var tr=document.createElement('tr'),b;cell(tr,r.scheduled_at);"    \
    "cell(tr,r.node);cell(tr,r.outcome);cell(tr,r.exit_code);b=document.createElement('button');"  \
    "b.textContent='Output';b.setAttribute('data-act','output');b.setAttribute('data-job',j);"     \
    "b.setAttribute('data-run',r.run_id);cell(tr,'').appendChild(b);t.appendChild(tr);});"         \
    "}).catch(function(e){say(e.message,true);});}"                                                \
    "document.addEventListener('click',function(ev){var b=ev.target.closest?"                      \
    "ev.target.closest('[data-act]'):null;if(!b)return;ev.preventDefault();"                       \
    "var a=b.getAttribute('data-act'),j=b.getAttribute('data-job')||'',u,body={},r;"               \
    "if(a=='login'){r=$('token').value.trim();if(!r)return;try{sessionStorage.setItem(K,r);}"      \
    "catch(e){}$('token').value='';say('');tick();return;}"                                        \
    "if(a=='logout'){try{sessionStorage.removeItem(K);}catch(e){}location.reload();return;}"       \
    "if(a=='runs'){runs(j);return;}"                                                               \
    "if(a=='output'){call('GET','/runs/'+encodeURIComponent(b.getAttribute('data-run'))+"          \
    "'/output?job='+encodeURIComponent(j)).then(function(d){$('output').textContent=d.output;})"   \
    ".catch(function(e){$('output').textContent='';say(e.message,true);});return;}"                \
    "if(a=='step-down'){u='/step-down';}else{u=J(j)+'/'+a;if(a=='pause'){"                         \
    "r=prompt('Pause '+j+': why?','');if(r===null)return;body.reason=r;}}"                         \
    "call('POST',u,body).then(function(){say(a+' '+j+': done');tick();}).catch(function(e){"       \
    "say(a+' '+j+': '+e.message,true);});});"                                                      \
    "if(tok())document.addEventListener('DOMContentLoaded',tick);"                                 \
    "setInterval(tick,%d);})();"

static void esc(FILE *f, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *str(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool num(const cJSON *o, const char *name, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v))
        return false;
    *out = v->valuedouble;
    return true;
}

static bool flag(const cJSON *o, const char *name)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* A duration for people: 412 ms, 8.2 s, 3 min 5 s, 2 h 10 min, 3 d 4 h. */
static const char *span(double ms, char *buf, size_t len)
{
    if (ms < 0)
        ms = 0;
    long long s = (long long)(ms / 1000);
    if (ms < 1000)
        snprintf(buf, len, "%.0f ms", ms);
    else if (ms < 60000)
        snprintf(buf, len, "%.1f s", ms / 1000);
    else if (s < 3600)
        snprintf(buf, len, "%lld min %lld s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%lld h %lld min", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, len, "%lld d %lld h", s / 86400, s % 86400 / 3600);
    return buf;
}

/* "in 3.0 s" / "5.2 s ago" for an RFC 3339 time, relative to now_ms. */
static void when(FILE *f, const char *rfc3339, int64_t now_ms)
{
    int64_t t;
    char e[64], b[48];
    if (rfc3339 == NULL) {
        fputs("<span class=\"mute\">never</span>", f);
        return;
    }
    fputs("<span title=\"", f);
    esc(f, rfc3339);
    fputs("\">", f);
    if (cron_time_parse(rfc3339, &t, e, sizeof e) == 0) {
        double d = (double)(t * 1000 - now_ms);
        if (d >= 0)
            fprintf(f, "in %s", span(d, b, sizeof b));
        else
            fprintf(f, "%s ago", span(-d, b, sizeof b));
    } else {
        esc(f, rfc3339);
    }
    fputs("</span>", f);
}

static const char *outcome_class(const char *o)
{
    if (o == NULL)
        return "mute";
    if (strcmp(o, "ok") == 0)
        return "ok";
    if (strcmp(o, "skipped") == 0 || strcmp(o, "superseded") == 0)
        return "mute";
    if (strcmp(o, "missed") == 0 || strcmp(o, "killed") == 0)
        return "warn";
    return "bad";
}

static void leader_line(FILE *f, const cJSON *doc, enum statuspage_mode mode)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(doc, "leader");
    double term = 0, lease;
    char b[48];
    if (!cJSON_IsObject(l)) {
        num(doc, "term", &term);
        fputs("<dt>Leader</dt><dd id=\"leader\" data-leader=\"\"><b class=\"bad\">none</b>", f);
        if (term > 0)
            fprintf(f, " <span class=\"mute\">(last term %.0f)</span>", term);
        fputs("</dd>\n", f);
        return;
    }
    fputs("<dt>Leader</dt><dd id=\"leader\" data-leader=\"", f);
    esc(f, str(l, "node"));
    fputs("\"><b>", f);
    esc(f, str(l, "node"));
    num(l, "term", &term);
    fprintf(f, "</b> · term %.0f", term);
    if (num(l, "lease_ms", &lease))
        fprintf(f, " · lease %s left", span(lease, b, sizeof b));
    if (mode == STATUSPAGE_OPERATE)
        fputs(" <button data-act=\"step-down\">Step down</button>", f);
    fputs("</dd>\n", f);
}

static void self_line(FILE *f, const cJSON *view, const char *redis)
{
    double age;
    char b[48];
    const char *state = str(view, "state");
    bool ready = flag(view, "ready");
    fputs("<dt>This node</dt><dd id=\"self\"><b>", f);
    esc(f, str(view, "node"));
    fputs("</b> · ", f);
    esc(f, state);
    fprintf(f, " · <span class=\"%s\">%s</span>", ready ? "ok" : "bad",
            ready ? "ready" : "not ready");
    if (!ready && str(view, "why") != NULL) {
        fputs(": ", f);
        esc(f, str(view, "why"));
    }
    fputs("</dd>\n<dt>Redis</dt><dd><code>", f);
    esc(f, redis);
    fprintf(f, "</code> · <span class=\"%s\">%s</span></dd>\n",
            flag(view, "redis_up") ? "ok" : "bad", flag(view, "redis_up") ? "up" : "unreachable");
    if (num(view, "nodes_read_ms_ago", &age))
        fprintf(f, "<dt>Read from Redis</dt><dd>%s ago</dd>\n", span(age, b, sizeof b));
}

/* A node's capacity in use / its capacity (full: warn; not accepting
 * offers: "stopping"), and its labels: two cells, after an open one. */
static void capacity_cells(FILE *f, const cJSON *n)
{
    double cap = 0, used = 0;
    const cJSON *l, *labels = cJSON_GetObjectItemCaseSensitive(n, "labels");
    bool stopping = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(n, "accepting"));
    if (!num(n, "capacity", &cap))
        fputs("</td><td class=\"mute\">", f);
    else if (!num(n, "assigned", &used))
        fprintf(f, "</td><td>%.0f", cap);
    else
        fprintf(f, "</td><td class=\"%s\">%.0f/%.0f%s", used >= cap ? "warn" : "", used, cap,
                stopping ? " stopping" : "");
    fputs("</td><td>", f);
    cJSON_ArrayForEach(l, labels)
    {
        if (l != labels->child)
            fputs(", ", f);
        esc(f, cJSON_IsString(l) ? l->valuestring : "?");
    }
}

static void nodes_table(FILE *f, const cJSON *doc)
{
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
    const cJSON *n;
    char b[48];
    fputs("<h2>Nodes</h2>\n", f);
    if (cJSON_GetArraySize(nodes) == 0) {
        fputs("<p class=\"mute\">None seen yet.</p>\n", f);
        return;
    }
    fputs("<div class=\"wrap\"><table id=\"nodes\"><tr><th>Node</th><th>State</th><th>Term</th>"
          "<th>Seen</th><th>Running</th><th>Capacity</th><th>Labels</th>"
          "<th class=\"w\">Host</th><th class=\"w\">Pid</th>"
          "<th class=\"w\">Since</th><th class=\"w\">Version</th></tr>\n",
          f);
    cJSON_ArrayForEach(n, nodes)
    {
        double term = 0, seen = 0, pid = 0, running = 0;
        const char *state = str(n, "state");
        bool alive = flag(n, "alive");
        if (!alive && (state == NULL || strcmp(state, "stopped") != 0))
            state = "unresponsive";
        const char *cls = !alive              ? (strcmp(state, "stopped") == 0 ? "mute" : "bad")
                          : flag(n, "leader") ? "ok"
                                              : "";
        fputs("<tr><td>", f);
        esc(f, str(n, "node"));
        if (flag(n, "leader"))
            fputs(" <b>(leader)</b>", f);
        fprintf(f, "</td><td class=\"%s\">", cls);
        esc(f, state != NULL ? state : "?");
        fputs("</td><td>", f);
        if (num(n, "term", &term))
            fprintf(f, "%.0f", term);
        num(n, "seen_ms_ago", &seen);
        fprintf(f, "</td><td>%s ago</td><td>", span(seen, b, sizeof b));
        if (num(n, "running", &running))
            fprintf(f, "%.0f", running);
        capacity_cells(f, n);
        fputs("</td><td class=\"w\">", f);
        esc(f, str(n, "host"));
        fputs("</td><td class=\"w\">", f);
        if (num(n, "pid", &pid))
            fprintf(f, "%.0f", pid);
        fputs("</td><td class=\"w\">", f);
        esc(f, str(n, "since"));
        fputs("</td><td class=\"w\">", f);
        esc(f, str(n, "version"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* One job's last run: when, and its outcome (with its exit, signal or tick
 * count; the reason as a tooltip): two cells. */
static void last_run_cells(FILE *f, const cJSON *last, int64_t now_ms)
{
    double code, ticks;
    if (!cJSON_IsObject(last)) {
        fputs("<td><span class=\"mute\">never</span></td><td></td>", f);
        return;
    }
    const char *o = str(last, "outcome"), *why = str(last, "reason");
    fputs("<td>", f);
    when(f, str(last, "scheduled_at"), now_ms);
    fprintf(f, "</td><td class=\"%s\"", outcome_class(o));
    if (why != NULL && why[0] != '\0') {
        fputs(" title=\"", f);
        esc(f, why);
        fputc('"', f);
    }
    fputc('>', f);
    esc(f, o);
    if (num(last, "exit_code", &code)) {
        fprintf(f, " <span class=\"mute\">(exit %.0f)</span>", code);
    } else if (str(last, "signal") != NULL) {
        fputs(" <span class=\"mute\">(signal ", f);
        esc(f, str(last, "signal"));
        fputs(")</span>", f);
    } else if (num(last, "ticks", &ticks) && ticks > 1) {
        fprintf(f, " <span class=\"mute\">(%.0f ticks)</span>", ticks);
    }
    fputs("</td>", f);
}

/* "since 2026-01-02T07:00:00.000Z by alice@web-1 (every job): migration",
 * as `baton status` says it, escaped. */
static void pause_words(FILE *f, const cJSON *p)
{
    const char *by = str(p, "by"), *why = str(p, "reason");
    fputs("since ", f);
    esc(f, str(p, "since"));
    fputs(" by ", f);
    esc(f, by != NULL && by[0] != '\0' ? by : "?");
    if (flag(p, "all"))
        fputs(" (every job)", f);
    if (why != NULL && why[0] != '\0') {
        fputs(": ", f);
        esc(f, why);
    }
}

/* A job's controls: its runs (control API), and with an operate token
 * Run now, and Pause or Resume. One cell. */
static void job_actions(FILE *f, const cJSON *j, enum statuspage_mode mode)
{
    const char *name = str(j, "name");
    bool paused = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "paused"));
    fputs("<td class=\"act\"><a href=\"#runs\" data-act=\"runs\" data-job=\"", f);
    esc(f, name);
    fputs("\">runs</a>", f);
    if (mode == STATUSPAGE_OPERATE) {
        static const char *const acts[][2] = {
            {"trigger", "Run now"}, {"pause", "Pause"}, {"resume", "Resume"}};
        for (size_t i = 0; i < 3; i++) {
            if ((i == 1 && paused) || (i == 2 && !paused))
                continue;
            fprintf(f, " <button data-act=\"%s\" data-job=\"", acts[i][0]);
            esc(f, name);
            fprintf(f, "\">%s</button>", acts[i][1]);
        }
    }
    fputs("</td>", f);
}

static void jobs_table(FILE *f, const cJSON *doc, int64_t now_ms, enum statuspage_mode mode)
{
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(doc, "jobs");
    const cJSON *j;
    char b[48];
    size_t npaused = 0;
    fputs("<h2>Jobs</h2>\n", f);
    if (cJSON_GetArraySize(jobs) == 0) {
        fputs("<p class=\"mute\">No jobs.</p>\n", f);
        return;
    }
    fprintf(f,
            "<div class=\"wrap\"><table id=\"jobs\"><tr><th>Job</th><th>Last run</th>"
            "<th>Outcome</th><th>Next run</th><th class=\"w\">Schedule</th>"
            "<th class=\"w\">Node</th><th class=\"w\">Took</th>%s</tr>\n",
            mode != STATUSPAGE_PLAIN ? "<th></th>" : "");
    cJSON_ArrayForEach(j, jobs)
    {
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(j, "last_run");
        double dur;
        fputs("<tr><td>", f);
        esc(f, str(j, "name"));
        fputs("</td>", f);
        last_run_cells(f, last, now_ms);
        const cJSON *paused = cJSON_GetObjectItemCaseSensitive(j, "paused");
        fputs("<td>", f);
        if (!flag(j, "enabled")) {
            fputs("<span class=\"mute\">disabled</span>", f);
        } else if (cJSON_IsObject(paused)) {
            fputs("<span class=\"warn\" title=\"", f);
            pause_words(f, paused);
            fputs("\">paused</span>", f);
            npaused++;
        } else {
            when(f, str(j, "next_run"), now_ms);
        }
        fputs("</td><td class=\"w\"><code>", f);
        esc(f, str(j, "schedule"));
        fputs("</code>", f);
        if (str(j, "timezone") != NULL && strcmp(str(j, "timezone"), "UTC") != 0) {
            fputs(" <span class=\"mute\">", f);
            esc(f, str(j, "timezone"));
            fputs("</span>", f);
        }
        fputs("</td><td class=\"w\">", f);
        if (cJSON_IsObject(last))
            esc(f, str(last, "node"));
        fputs("</td><td class=\"w\">", f);
        if (cJSON_IsObject(last) && str(last, "started") != NULL && num(last, "duration_ms", &dur))
            fputs(span(dur, b, sizeof b), f);
        fputs("</td>", f);
        if (mode != STATUSPAGE_PLAIN)
            job_actions(f, j, mode);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
    if (npaused == 0)
        return;
    /* Who paused what, when and why: in words, for phones and terminals
     * (a title shows on hover only). */
    fputs("<ul id=\"paused\">\n", f);
    cJSON_ArrayForEach(j, jobs)
    {
        const cJSON *paused = cJSON_GetObjectItemCaseSensitive(j, "paused");
        if (!flag(j, "enabled") || !cJSON_IsObject(paused))
            continue;
        fputs("<li><b>", f);
        esc(f, str(j, "name"));
        fputs("</b> <span class=\"warn\">paused</span> ", f);
        pause_words(f, paused);
        fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
}

/* What runs now, every job's live runs (from the nodes' heartbeats). */
static void running_table(FILE *f, const cJSON *doc, int64_t now_ms)
{
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(doc, "jobs"), *j, *r;
    size_t n = 0;
    char b[48];
    cJSON_ArrayForEach(j, jobs) n +=
        (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "running"));
    fputs("<h2>Running now</h2>\n", f);
    if (n == 0) {
        fputs("<p class=\"mute\" id=\"running\">Nothing runs now.</p>\n", f);
        return;
    }
    fputs("<div class=\"wrap\"><table id=\"running\"><tr><th>Job</th><th>Node</th>"
          "<th>Trigger</th><th>Started</th><th>Elapsed</th><th class=\"w\">Run id</th></tr>\n",
          f);
    cJSON_ArrayForEach(j, jobs)
    {
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "running"))
        {
            double elapsed;
            fputs("<tr><td>", f);
            esc(f, str(j, "name"));
            fputs("</td><td>", f);
            esc(f, str(r, "node"));
            fputs("</td><td>", f);
            esc(f, str(r, "trigger"));
            if (str(r, "by") != NULL) {
                fputs(" by ", f);
                esc(f, str(r, "by"));
            }
            fputs("</td><td>", f);
            when(f, str(r, "started"), now_ms);
            fputs("</td><td>", f);
            if (num(r, "elapsed_ms", &elapsed))
                fputs(span(elapsed, b, sizeof b), f);
            fputs("</td><td class=\"w\"><code>", f);
            esc(f, str(r, "run_id"));
            fputs("</code></td></tr>\n", f);
        }
    }
    fputs("</table></div>\n", f);
}

/* The ticks offered to members, not yet accepted: a table, or nothing. */
static void offers_table(FILE *f, const cJSON *doc)
{
    const cJSON *offers = cJSON_GetObjectItemCaseSensitive(doc, "offers"), *e;
    if (cJSON_GetArraySize(offers) == 0)
        return;
    fputs("<h2>Offered to members</h2>\n<div class=\"wrap\"><table id=\"offers\"><tr>"
          "<th>Job</th><th>Tick</th><th>Offered to</th></tr>\n",
          f);
    cJSON_ArrayForEach(e, offers)
    {
        fputs("<tr><td>", f);
        esc(f, str(e, "job"));
        fputs("</td><td>", f);
        esc(f, str(e, "scheduled_at"));
        fputs("</td><td>", f);
        esc(f, str(e, "node"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* The pools (their runs in Redis), the ticks offered to members and those
 * waiting for a slot (the leader's): tables, or nothing when there are none. */
static void limits_tables(FILE *f, const cJSON *doc)
{
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(doc, "pools"), *p;
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(doc, "waiting"), *w;
    char b[48];
    if (cJSON_GetArraySize(pools) > 0) {
        fputs("<h2>Pools</h2>\n<div class=\"wrap\"><table id=\"pools\"><tr><th>Pool</th>"
              "<th>Running</th><th>Limit</th></tr>\n",
              f);
        cJSON_ArrayForEach(p, pools)
        {
            double running, limit = 0;
            num(p, "limit", &limit);
            fputs("<tr><td>", f);
            esc(f, str(p, "name"));
            if (num(p, "running", &running))
                fprintf(f, "</td><td class=\"%s\">%.0f", running >= limit ? "warn" : "ok", running);
            else
                fputs("</td><td class=\"mute\">?", f);
            fprintf(f, "</td><td>%.0f</td></tr>\n", limit);
        }
        fputs("</table></div>\n", f);
    }
    offers_table(f, doc);
    if (cJSON_GetArraySize(waiting) == 0)
        return;
    fputs("<h2>Waiting for a slot</h2>\n<div class=\"wrap\"><table id=\"waiting\"><tr>"
          "<th>Job</th><th>Tick</th><th>Waits for</th><th>Waited</th><th>Queued</th></tr>\n",
          f);
    cJSON_ArrayForEach(w, waiting)
    {
        double limit = 0, waited = 0, queued = 0;
        num(w, "limit", &limit);
        num(w, "waited_ms", &waited);
        num(w, "queued", &queued);
        fputs("<tr><td>", f);
        esc(f, str(w, "job"));
        fputs("</td><td>", f);
        esc(f, str(w, "scheduled_at"));
        fputs("</td><td>", f);
        const char *reason = str(w, "reason");
        if (reason != NULL && strcmp(reason, "room") == 0) {
            fputs("a member with room", f);
        } else {
            if (str(w, "pool") != NULL) {
                fputs("pool ", f);
                esc(f, str(w, "pool"));
            } else {
                fputs("max_running", f);
            }
            fprintf(f, " (%.0f)", limit);
        }
        fputs("</td><td title=\"since ", f);
        esc(f, str(w, "since"));
        fprintf(f, "\">%s</td><td>%.0f</td></tr>\n", span(waited, b, sizeof b), queued);
    }
    fputs("</table></div>\n", f);
}

static void transitions_table(FILE *f, const cJSON *view)
{
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(view, "transitions");
    const cJSON *t;
    fputs("<h2>Recent transitions of this node</h2>\n", f);
    if (cJSON_GetArraySize(tr) == 0) {
        fputs("<p class=\"mute\">None yet.</p>\n", f);
        return;
    }
    fputs("<div class=\"wrap\"><table id=\"transitions\"><tr><th>Time (UTC)</th><th>From</th>"
          "<th>To</th><th>Trigger</th><th>Term</th></tr>\n",
          f);
    cJSON_ArrayForEach(t, tr)
    {
        double term = 0;
        num(t, "term", &term);
        const char *ts = str(t, "ts"), *tt = ts != NULL ? strchr(ts, 'T') : NULL;
        fputs("<tr><td title=\"", f);
        esc(f, ts);
        fputs("\">", f);
        esc(f, tt != NULL ? tt + 1 : ts); /* the time: the date is in the tooltip */
        fputs("</td><td>", f);
        esc(f, str(t, "from"));
        fputs("</td><td><b>", f);
        esc(f, str(t, "to"));
        fputs("</b></td><td>", f);
        /* Internal names in words, as the text log says them (logfmt.h). */
        const char *trigger = str(t, "trigger"), *guard = str(t, "guard");
        const char *tw = trigger != NULL ? logfmt_words("trigger", trigger) : NULL;
        const char *gw = guard != NULL ? logfmt_words("guard", guard) : NULL;
        esc(f, tw != NULL ? tw : trigger);
        if (guard != NULL) {
            fputs(" <span class=\"mute\">[", f);
            esc(f, gw != NULL ? gw : guard);
            fputs("]</span>", f);
        }
        if (term > 0)
            fprintf(f, "</td><td>%.0f</td></tr>\n", term);
        else /* a follower's own term: none */
            fputs("</td><td class=\"mute\">-</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* The page's head, and <body> up to the start of #page. */
static void page_head(FILE *f, const char *title)
{
    fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    fputs(title, f);
    fprintf(f,
            "</title>\n<noscript><meta http-equiv=\"refresh\" content=\"%d\"></noscript>\n"
            "<style>%s</style>\n<script>",
            STATUSPAGE_REFRESH_S + 3, style);
    fprintf(f, SCRIPT_FMT, STATUSPAGE_REFRESH_S * 1000);
    fputs("</script>\n</head>\n<body>\n", f);
}

/* After #page: the token's field and what the controls show (kept across
 * refreshes), then the end. */
static void page_tail(FILE *f, bool control)
{
    if (control)
        fputs("<p id=\"login\">Token: <input id=\"token\" type=\"password\" autocomplete=\"off\" "
              "size=\"30\"> <button data-act=\"login\">Use</button> <button "
              "data-act=\"logout\">Forget</button> <span class=\"mute\">(kept in this tab "
              "only)</span></p>\n<p id=\"msg\"></p>\n<div id=\"runs\"></div>\n",
              f);
    fputs("</body></html>\n", f);
}

static char *page_close(FILE *f, char **buf, size_t *len)
{
    if (fclose(f) != 0) {
        free(*buf);
        *len = 0;
        return NULL;
    }
    return *buf;
}

char *statuspage_render(const cJSON *doc, int64_t now_ms, size_t *len)
{
    return statuspage_render_mode(doc, now_ms, STATUSPAGE_PLAIN, len);
}

char *statuspage_login(size_t *len)
{
    char *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(&buf, len);
    if (f == NULL)
        return NULL;
    page_head(f, "baton: a token is needed");
    fputs("<div id=\"page\" data-login><h1>baton</h1>\n<p>This endpoint needs a token "
          "(<code>baton token new NAME --role read|operate --file FILE</code>): type it "
          "below.</p>\n</div>\n",
          f);
    page_tail(f, true);
    return page_close(f, &buf, len);
}

char *statuspage_render_mode(const cJSON *doc, int64_t now_ms, enum statuspage_mode mode,
                             size_t *len)
{
    char *buf = NULL, *title = NULL;
    size_t tlen = 0;
    char asof[40];
    *len = 0;
    FILE *f = open_memstream(&buf, len), *t = open_memstream(&title, &tlen);
    if (f == NULL || t == NULL) {
        if (f != NULL)
            fclose(f);
        if (t != NULL)
            fclose(t);
        free(buf);
        free(title);
        return NULL;
    }
    const cJSON *view = cJSON_GetObjectItemCaseSensitive(doc, "view");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(doc, "leader");
    log_rfc3339_ms(now_ms, asof, sizeof asof);

    fputs("baton ", t);
    esc(t, str(doc, "group"));
    if (cJSON_IsObject(l)) {
        double term = 0;
        num(l, "term", &term);
        fputs(": leader ", t);
        esc(t, str(l, "node"));
        fprintf(t, " (term %.0f)", term);
    } else {
        fputs(": no leader", t);
    }
    if (fclose(t) != 0) {
        fclose(f);
        free(buf);
        free(title);
        return NULL;
    }
    page_head(f, title);
    free(title);
    fprintf(f, "<div id=\"page\" data-role=\"%s\">\n<h1>baton · group ",
            mode == STATUSPAGE_OPERATE ? "operate"
            : mode == STATUSPAGE_READ  ? "read"
                                       : "plain");
    esc(f, str(doc, "group"));
    fputs("</h1>\n<dl>\n", f);
    leader_line(f, doc, mode);
    self_line(f, view, str(doc, "redis"));
    fprintf(f, "<dt>As of</dt><dd id=\"asof\">%s</dd>\n</dl>\n", asof);
    nodes_table(f, doc);
    jobs_table(f, doc, now_ms, mode);
    running_table(f, doc, now_ms);
    limits_tables(f, doc);
    transitions_table(f, view);
    fprintf(f,
            "<footer class=\"mute\" id=\"foot\">This node's view, refreshed every %d s. "
            "<a href=\"/status\">/status</a> · <a href=\"/metrics\">/metrics</a> · "
            "<a href=\"/readyz\">/readyz</a></footer>\n</div>\n",
            STATUSPAGE_REFRESH_S);
    page_tail(f, mode != STATUSPAGE_PLAIN);
    return page_close(f, &buf, len);
}
