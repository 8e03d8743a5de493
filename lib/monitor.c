/*
 * monitor: the endpoints of maro-peers --serve (monitor.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "monitor.h"
#include "view.h"

/*
 * The status page: polls status.json every second and redraws its tables
 * from it, built with textContent only (names and hosts are not markup):
 * the jobs first, then the cards, hosts, types, pools, and the workers
 * (the members that publish stats, but the pools, which have a table of
 * their own), each with the age of its heartbeat.
 */
static const char page[] =
"<!doctype html>\n"
"<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
"<title>maro monitor</title>\n"
"<style>\n"
"body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:8px;max-width:1100px;"
"background:#f7f7f5;color:#222}\n"
"h1{font-size:1.25em;margin:0 0 6px}h2{font-size:1em;margin:16px 0 4px}\n"
"#banner{padding:6px 10px;border-radius:4px}\n"
".up{background:#e2f2e2}.down{background:#fbdcdc;color:#8a0000;font-weight:bold}\n"
".cards{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}\n"
".card{background:#fff;border:1px solid #ddd;border-radius:4px;padding:4px 10px;"
"min-width:64px}.card b{display:block;font-size:1.4em}\n"
".wrap{overflow-x:auto;background:#fff;border:1px solid #ddd;border-radius:4px}\n"
"table{border-collapse:collapse;width:100%}\n"
"th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}\n"
"th{background:#f0f0ec;font-weight:600}th:first-child,td:first-child,"
"td.type,td.host,th.type,th.host{text-align:left}\n"
".stale table,.stale .cards{opacity:.45}.none{color:#888;padding:4px 8px}\n"
"@media (max-width:600px){body{font-size:13px;padding:4px}th,td{padding:2px 4px}}\n"
"</style></head><body>\n"
"<h1>maro &middot; group <span id=\"group\"></span></h1>\n"
"<div id=\"banner\">loading&hellip;</div>\n"
"<h2>Jobs</h2><div class=\"wrap\"><table id=\"jobs\"></table></div>\n"
"<div class=\"cards\">\n"
"<div class=\"card\">hosts<b id=\"n-hosts\">-</b></div>\n"
"<div class=\"card\">members<b id=\"n-members\">-</b></div>\n"
"<div class=\"card\">CPUs<b id=\"n-cpus\">-</b></div>\n"
"<div class=\"card\">tasks done<b id=\"n-done\">-</b></div>\n"
"<div class=\"card\">done/s<b id=\"n-rdone\">-</b></div>\n"
"</div>\n"
"<h2>Hosts</h2><div class=\"wrap\"><table id=\"hosts\"></table></div>\n"
"<h2>Types</h2><div class=\"wrap\"><table id=\"types\"></table></div>\n"
"<h2>Pools</h2><div class=\"wrap\"><table id=\"pools\"></table></div>\n"
"<h2>Workers</h2><div class=\"wrap\"><table id=\"components\"></table></div>\n"
"<script>\n"
"\"use strict\";\n"
"function $(id){return document.getElementById(id);}\n"
"function num(x,d){return x===undefined||x===null?\"-\":d?Number(x).toFixed(d):String(x);}\n"
"function mem(kb){return kb>=1048576?(kb/1048576).toFixed(1)+\"G\":(kb/1024).toFixed(0)+\"M\";}\n"
"function age(ms){return (ms/1000).toFixed(1)+\"s\";}\n"
"function two(n){return (n<10?\"0\":\"\")+n;}\n"
"function dur(s){if(s===null||s===undefined)return \"-\";s=Math.min(s,359999);"
"return s<60?s+\"s\":s<3600?Math.floor(s/60)+\"m\"+two(s%60)+\"s\":"
"Math.floor(s/3600)+\"h\"+two(Math.floor(s/60)%60)+\"m\";}\n"
"function table(id,head,rows){\n"
"  var t=$(id),tr;t.textContent=\"\";\n"
"  if(!rows.length){tr=t.insertRow();tr.insertCell().textContent=\"none\";"
"tr.cells[0].className=\"none\";return;}\n"
"  tr=t.insertRow();\n"
"  head.forEach(function(h){var th=document.createElement(\"th\");th.textContent=h;"
"th.className=h.toLowerCase();tr.appendChild(th);});\n"
"  rows.forEach(function(r){\n"
"    tr=t.insertRow();tr.dataset.name=r[0];\n"
"    r.forEach(function(c,i){var td=tr.insertCell();td.textContent=c;"
"td.className=head[i].toLowerCase().replace(\"/s\",\"-rate\");});\n"
"  });\n"
"}\n"
"var COLS=[\"in\",\"out\",\"done\",\"failed\",\"flight\"],RATES=[\"rdone\",\"rin\",\"rout\"];\n"
"var HEAD=[\"In\",\"Out\",\"Done\",\"Failed\",\"Flight\",\"Done/s\",\"In/s\",\"Out/s\"];\n"
"var JOBS=[\"Job\",\"Host\",\"Started\",\"Total\",\"Done\",\"Failed\",\"Gaveup\",\"Open\","
"\"Done/s\",\"ETA\",\"Age\"];\n"
"function figures(s){return COLS.map(function(k){return num(s[k]);})"
".concat(RATES.map(function(k){return num(s[k]||0,1);}));}\n"
"function render(j){\n"
"  $(\"group\").textContent=j.group;\n"
"  var b=$(\"banner\");\n"
"  if(!j.registry_up){b.className=\"down\";b.textContent=\"registry unavailable: \"+j.error+"
"\" (the figures below are the last known)\";document.body.className=\"stale\";return;}\n"
"  b.className=\"up\";b.textContent=\"registry up \\u00b7 updated \"+"
"new Date().toLocaleTimeString();\n"
"  document.body.className=\"\";\n"
"  table(\"jobs\",JOBS,(j.jobs||[]).map(function(b){\n"
"    return [b.name,b.host,new Date(b.start*1000).toLocaleTimeString(),"
"b.total===null?b.read+\"+\":String(b.total),num(b.done),num(b.failed),num(b.gaveup),"
"num(b.open),num(b.rate,1),dur(b.eta),age(b.heartbeat_age_ms)];}));\n"
"  $(\"n-hosts\").textContent=j.hosts;$(\"n-members\").textContent=j.members;"
"$(\"n-cpus\").textContent=j.cpus;\n"
"  var done=0,rdone=0,t;\n"
"  for(t in j.type_stats){done+=j.type_stats[t].done||0;rdone+=j.type_stats[t].rdone||0;}\n"
"  $(\"n-done\").textContent=done;$(\"n-rdone\").textContent=rdone.toFixed(1);\n"
"  table(\"hosts\",[\"Host\",\"CPUs\",\"Load1\",\"Mem\",\"Members\"],"
"j.host_status.map(function(h){\n"
"    return [h.host,num(h.ncpu),num(h.load1,2),mem(h.mem_used_kb),num(h.members)];}));\n"
"  table(\"types\",[\"Type\",\"Members\"].concat(HEAD),Object.keys(j.types).map(function(k){\n"
"    return [k,num(j.types[k])].concat(figures(j.type_stats[k]||{}));}));\n"
"  table(\"pools\",[\"Pool\",\"Host\",\"Jobs\",\"Running\",\"Restarts\",\"Gaveup\"],"
"j.pools.map(function(p){\n"
"    return [p.name,p.host,num(p.jobs),num(p.running),num(p.restarts),num(p.gaveup)];}));\n"
"  table(\"components\",[\"Name\",\"Type\",\"Host\"].concat(HEAD,[\"Age\"]),"
"j.components.filter(function(c){return c.type!==\"pool\";}).map(function(c){\n"
"    return [c.name,c.type,c.host].concat(figures(c.stats),[age(c.heartbeat_age_ms)]);}));\n"
"}\n"
"function poll(){\n"
"  fetch(\"status.json\",{cache:\"no-store\"}).then(function(r){return r.json();})"
".then(render)\n"
"  .catch(function(e){var b=$(\"banner\");b.className=\"down\";"
"b.textContent=\"monitor unreachable: \"+e;document.body.className=\"stale\";})\n"
"  .then(function(){setTimeout(poll,1000);});\n"
"}\n"
"poll();\n"
"</script>\n"
"</body></html>\n";

/*
 * The listing: the last one while it is fresh, else a new one, waiting on
 * the registry no longer than m->budget_us.  *v is m's (not to be freed);
 * -1 with *why when the registry failed.
 */
static ssize_t
list(struct maro_monitor *m, const struct maro_entry **v, const char **why)
{
	int64_t saved = maro_deadline, now = maro_now_us(), until = now + m->budget_us;
	struct maro_entry *fresh = NULL;
	ssize_t n;

	if (!m->seen_at || now - m->seen_at >= MARO_MONITOR_FRESH_US) {
		if (until < maro_deadline)
			maro_deadline = until;
		if (!m->r)
			m->r = maro_registry_open(m->url, m->group, NULL, m->err, sizeof m->err);
		n = m->r ? maro_registry_list_jobs(m->r, m->prefix, &fresh) : -1;
		maro_deadline = saved;
		m->listings++;
		if (n < 0)
			snprintf(m->seen_err, sizeof m->seen_err, "%s",
			    m->r ? maro_registry_error(m->r) : m->err);
		free(m->seen);
		m->seen = fresh;
		m->nseen = n;
		/* from its end: a listing that took the whole budget is not taken again at once */
		m->seen_at = maro_now_us();
	}
	*v = m->seen;
	*why = m->seen_err;
	return m->nseen;
}

void
maro_monitor_free(struct maro_monitor *m)
{
	free(m->seen);
	m->seen = NULL;
	m->seen_at = 0;
}

/* The summary with the group and the registry's state before its figures. */
static void
status_json(struct maro_monitor *m, struct maro_http_reply *rep)
{
	const struct maro_entry *v;
	const char *why;
	ssize_t n = list(m, &v, &why);
	json_t *j = json_object();
	char *s = NULL;
	size_t len;

	json_object_set_new(j, "group", json_string(m->group));
	json_object_set_new(j, "registry_up", json_boolean(n >= 0));
	if (n < 0)
		json_object_set_new(j, "error", json_string(why));
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		goto oom;
	len = strlen(s);
	if (n < 0) {
		if (maro_buf_printf(&rep->body, "%s\n", s) < 0)
			goto oom;
	} else {
		/* {"group":..,"registry_up":true, then the summary's keys */
		s[len - 1] = ',';
		if (maro_buf_puts(&rep->body, s) < 0 ||
		    maro_view_status(&rep->body, v, (size_t)n, 1) < 0)
			goto oom;
		memmove(rep->body.p + len, rep->body.p + len + 1, rep->body.len - len - 1);
		rep->body.len--;
	}
	free(s);
	rep->type = "application/json";
	return;
oom:
	free(s);
	rep->status = 500;
	maro_buf_reset(&rep->body);
}

static void
metrics(struct maro_monitor *m, struct maro_http_reply *rep)
{
	const struct maro_entry *v;
	const char *why;
	ssize_t n = list(m, &v, &why);

	rep->type = "text/plain; version=0.0.4; charset=utf-8";
	if (maro_view_prometheus(&rep->body, v, n, m->group) < 0) {
		rep->status = 500;
		maro_buf_reset(&rep->body);
	}
}

void
maro_monitor_answer(void *arg, const char *path, struct maro_http_reply *rep)
{
	struct maro_monitor *m = arg;

	if (!strcmp(path, "/")) {
		rep->type = "text/html; charset=utf-8";
		if (maro_buf_append(&rep->body, page, sizeof page - 1) < 0)
			rep->status = 500;
	} else if (!strcmp(path, "/metrics")) {
		metrics(m, rep);
	} else if (!strcmp(path, "/status.json")) {
		status_json(m, rep);
	} else {
		rep->status = 404;
		maro_buf_puts(&rep->body, "not found: this server has /, /metrics and /status.json\n");
	}
}
