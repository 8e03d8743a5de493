#!/usr/bin/env bats
# check: early (a long one)
# The cluster monitor of maro-peers: a running scatter's job first in
# --status, its JSON, its metrics (checked by promtool) and the page
# rendered by headless Chromium; --serve's page, JSON and metrics over real
# HTTP (curl), scraped by a real Prometheus server and read back through
# its query API; one page left open in Chromium, read through the DevTools
# protocol (a screenshot is kept in build/monitor.png); and a Redis outage
# the server lives through.  Each test runs on a Redis of the suite's own
# (a job's figures go out with every heartbeat, the members' counters
# every 5 s at most), or, for the outage, of its own.

load helpers

setup_file() { sh "$MARO_TOP/scripts/test-redis" start "$BATS_FILE_TMPDIR/redis" >/dev/null; }
teardown_file() { sh "$MARO_TOP/scripts/test-redis" stop "$BATS_FILE_TMPDIR/redis" 2>/dev/null || :; }
setup() {
	export MARO_GROUP="t$BATS_SUITE_TEST_NUMBER-$$"
	export MARO_REGISTRY="redis://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/redis/redis.port")/0"
	export MARO_TTL=2s
	cd "$BATS_TEST_TMPDIR"
	STOPPED=
}
teardown() {
	[ -z "$STOPPED" ] || kill -CONT "$STOPPED" 2>/dev/null || :
	exec 7>&- 8<&-
	default_teardown
	sh "$MARO_TOP/scripts/test-redis" stop "$BATS_TEST_TMPDIR/r2" 2>/dev/null || :
}

HOST=$(hostname)

# workers N [SLEEP]: N maro-dist workers (worker.1..N) that echo each task
# after SLEEP seconds, and wait until they are live
workers() {
	local w
	for w in $(seq "$1"); do
		bg 60 maro-dist -n "worker.$w" --raw --co '*:*:1' \
			"while read -r x; do sleep ${2:-0}; echo \"\$x\"; done" 2> "worker.$w.err"
	done
	wait_until 10 live_is worker. "$1"
}

# serve [ADDR]: maro-peers --serve in the background; its URL in $URL
serve() {
	bg 60 maro-peers --serve "${1:-0}" > url 2> serve.err
	SERVE_PID=$BG_PID
	wait_until 10 has_lines url 1
	URL=$(cat url)
}

# done_of NAME: NAME's tasks done as maro-peers --status -f json says
done_of() {
	maro-peers --status -f json | jq -r ".components[] | select(.name == \"$1\") | .stats.done"
}
done_is() { [ "$(done_of "$1")" = "$2" ]; }

need() { command -v "$1" > /dev/null || skip "$1 is not installed (make deps installs Debian's $2)"; }

# job_is FILTER: the first job maro-peers --status -f json shows passes the jq FILTER
job_is() { maro-peers --status -f json | jq -e ".jobs[0] | $1" > /dev/null; }

# One page left open in headless Chromium, read through the DevTools
# protocol on a pipe (--remote-debugging-pipe: its fds 3 and 4, here 7 and
# 8, NUL-ended JSON): cdp_open URL, cdp_call METHOD [PARAMS] (its reply),
# cdp_eval EXPR (its value), cdp_close.
cdp_send() { printf '%s\0' "$1" >&7; }
# cdp_recv ID: the reply to the request ID (events, which have no id, are skipped)
cdp_recv() {
	local m
	while IFS= read -r -d '' -t 10 m <&8; do
		if [[ $m == "{\"id\":$1,"* ]]; then
			printf '%s\n' "$m"
			return 0
		fi
	done
	echo "cdp_recv: no reply $1" >&2
	return 1
}
cdp_open() {
	local target
	mkfifo cdp.in cdp.out
	bg 60 sh -c 'exec chromium "$@" 3< cdp.in 4> cdp.out' sh --headless --no-sandbox --disable-gpu \
		--user-data-dir="$BATS_TEST_TMPDIR/chrome.cdp" --remote-debugging-pipe "$1" 2> cdp.err
	exec 7> cdp.in 8< cdp.out
	cdp_send '{"id":1,"method":"Target.getTargets"}'
	target=$(cdp_recv 1 | jq -r '.result.targetInfos[] | select(.type == "page") | .targetId' | head -n 1)
	cdp_send "$(jq -nc --arg t "$target" '{id: 2, method: "Target.attachToTarget", params: {targetId: $t, flatten: true}}')"
	CDP_SESSION=$(cdp_recv 2 | jq -r .result.sessionId)
	[ -n "$CDP_SESSION" ] && [ "$CDP_SESSION" != null ]
}
# cdp_call METHOD [PARAMS]: the reply to a method of the open page (PARAMS: a JSON object)
cdp_call() {
	local id=$((RANDOM + 10))
	cdp_send "{\"id\":$id,\"sessionId\":\"$CDP_SESSION\",\"method\":\"$1\",\"params\":${2:-{\}}}"
	cdp_recv "$id"
}
cdp_eval() {
	cdp_call Runtime.evaluate "$(jq -nc --arg e "$1" '{expression: $e}')" | jq -r '.result.result.value // empty'
}
cdp_close() {
	cdp_send '{"id":3,"method":"Browser.close"}'
	cdp_recv 3 > /dev/null || :
	exec 7>&- 8<&-
}
# page_html ID: the open page's element ID, as HTML
page_html() { cdp_eval "document.getElementById('$1').outerHTML"; }
# page_jobs_are REGEX: the open page's table of jobs matches REGEX
page_jobs_are() { [[ "$(page_html jobs)" =~ $1 ]]; }
# page_workers_are NAME,...: the rows of the open page's table of workers
page_workers_are() {
	[ "$(cdp_eval "[...document.querySelectorAll('#components tr[data-name]')].map(r => r.dataset.name).join()")" = "$1" ]
}

# dom: the page as headless Chromium renders it, once it has polled status.json
dom() {
	timeout 30 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$BATS_TEST_TMPDIR/chrome" \
		--virtual-time-budget=3000 --dump-dom "$URL" 2> chrome.err
}

@test "a running scatter's job comes first in --status, -f json, -f prometheus (promtool passes) and on the page left open; the workers, not the pool, with their ages; a screenshot" {
	need promtool prometheus
	need chromium chromium
	# three workers of a pool: task 7 fails, task 1000 waits for the gate
	export GATE=$BATS_TEST_TMPDIR/gate
	bg 60 maro-pool -j 3 -W 50s -- maro-dist --raw --fail-prefix 'ERR ' --co '*:*:1' \
		'while read -r x; do [ "$x" != 7 ] || { echo "ERR poison"; continue; }
		[ "$x" != 1000 ] || while [ ! -e "$GATE" ]; do sleep 0.05; done; echo "$x"; done' 2> pool.err
	# one page, opened before the job and never reloaded
	serve
	cdp_open "$URL"
	wait_until 10 live_is worker. 3
	wait_until 10 page_jobs_are '<td class="none">none</td>'
	bg 60 sh -c 'seq 1000 | maro-scatter -n master -P worker -t t --json-lines --retries 1 -W 50s -f payload > out 2> scatter.err; echo $? > rc'
	wait_until 15 job_is '.total == 1000 and .done == 998 and .gaveup == 1 and .open == 1 and .rate > 0'
	run -0 --separate-stderr maro-peers --status
	[[ "${lines[0]}" =~ ^JOB\ +HOST\ +STARTED\ +TOTAL\ +DONE\ +FAILED\ +GAVEUP\ +OPEN\ +DONE/s\ +ETA\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^master\.[0-9a-f]{8}\ +$HOST\ +[0-9]{2}:[0-9]{2}:[0-9]{2}\ +1000\ +998\ +1\ +1\ +1\ +[0-9]+\.[0-9]\ +[0-9]+s\ +[0-9.]+s$ ]]
	assert_line "hosts 1, members 4, CPUs $(nproc)"
	# JSON: the jobs first, the master's reply inbox no member
	run -0 maro-peers --status -f json
	local job
	job=$(jq -r '.jobs[0].name' <<< "$output")
	[[ "$job" =~ ^master\.[0-9a-f]{8}$ ]]
	assert_equal "$(jq -c '[(keys_unsorted | first), (.jobs | length), .members, .types]' <<< "$output")" \
		'["jobs",1,4,{"pool":1,"worker":3}]'
	assert_equal "$(jq -c '.jobs[0] | [.host, .total, .read, .done, .failed, .gaveup, .open, .eta >= 0, (.start - now | fabs < 60), .heartbeat_age_ms < 2000]' <<< "$output")" \
		"[\"$HOST\",1000,1000,998,1,1,1,true,true,true]"
	assert_equal "$(jq -c '[.components[] | [.name, .heartbeat_age_ms < 2000]]' <<< "$output")" \
		"[[\"pool.$HOST\",true],[\"worker.$HOST.1\",true],[\"worker.$HOST.2\",true],[\"worker.$HOST.3\",true]]"
	# Prometheus: the jobs first, after the registry's state; the members' figures
	run -0 --separate-stderr maro-peers --status -f prometheus
	printf '%s\n' "$output" > m.prom
	run -0 promtool check metrics < m.prom
	run -0 cat m.prom
	local j="group=\"$MARO_GROUP\",name=\"$job\",host=\"$HOST\""
	assert_equal "${lines[3]}" "# HELP maro_job_tasks The job's tasks read so far, by state: done (answered), gaveup (given up), open (sent, not finished), waiting (not yet sent)."
	assert_line "maro_job_tasks{$j,state=\"done\"} 998"
	assert_line "maro_job_tasks{$j,state=\"gaveup\"} 1"
	assert_line "maro_job_tasks{$j,state=\"open\"} 1"
	assert_line "maro_job_tasks{$j,state=\"waiting\"} 0"
	assert_line "# TYPE maro_job_attempts_failed_total counter"
	assert_line "maro_job_attempts_failed_total{$j} 1"
	assert_line "maro_job_input_tasks{$j} 1000"
	assert_line --regexp "^maro_job_start_time_seconds\\{$j\\} [0-9]{10}\$"
	assert_line --regexp "^maro_job_eta_seconds\\{$j\\} [0-9]+\$"
	local l="group=\"$MARO_GROUP\",name=\"worker.$HOST.1\",type=\"worker\",host=\"$HOST\""
	assert_line "maro_registry_up{group=\"$MARO_GROUP\"} 1"
	assert_line "maro_component_up{$l} 1"
	assert_line --regexp "^maro_component_heartbeat_age_seconds\\{$l\\} [0-9.]+\$"
	assert_line --regexp "^maro_component_start_time_seconds\\{$l\\} [0-9]{10}(\\.[0-9]+)?\$"
	# a worker's counters go out with its heartbeats, written every 5 s at most: there, not yet counted
	assert_line "# TYPE maro_tasks_done_total counter"
	assert_line --regexp '^# HELP maro_tasks_done_total .+'
	assert_line --regexp "^maro_tasks_done_total\\{$l\\} [0-9]+\$"
	assert_line --regexp "^maro_tasks_failed_total\\{$l\\} [0-9]+\$"
	assert_line --regexp "^maro_messages_in_total\\{$l\\} [0-9]+\$"
	assert_line --regexp "^maro_bytes_out_total\\{$l\\} [0-9]+\$"
	assert_line --regexp "^maro_messages_out_total\\{$l\\} [0-9]+\$"
	assert_line "maro_members{group=\"$MARO_GROUP\",type=\"worker\"} 3"
	assert_line --regexp "^maro_host_cpus\\{group=\"$MARO_GROUP\",host=\"$HOST\"\\} [1-9][0-9]*\$"
	assert_line --regexp "^maro_host_memory_used_bytes\\{group=\"$MARO_GROUP\",host=\"$HOST\"\\} [1-9][0-9]*\$"
	assert_line --regexp "^maro_host_load1\\{group=\"$MARO_GROUP\",host=\"$HOST\"\\} [0-9.]+\$"
	assert_line "maro_host_members{group=\"$MARO_GROUP\",host=\"$HOST\"} 4"
	local p="group=\"$MARO_GROUP\",name=\"pool.$HOST\",type=\"pool\",host=\"$HOST\""
	assert_line "maro_pool_jobs{$p} 3"
	assert_line "maro_pool_jobs_running{$p} 3"
	assert_line "maro_pool_restarts_total{$p} 0"
	assert_line "maro_pool_jobs_gaveup_total{$p} 0"
	# the page, as it polls: the job's row, first of the tables
	wait_until 10 page_jobs_are "<tr data-name=\"$job\"><td class=\"job\">$job</td><td class=\"host\">$HOST</td><td class=\"started\">[^<]+</td><td class=\"total\">1000</td><td class=\"done\">998</td><td class=\"failed\">1</td><td class=\"gaveup\">1</td><td class=\"open\">1</td><td class=\"done-rate\">[0-9.]+</td><td class=\"eta\">[0-9]+s</td><td class=\"age\">[0-9.]+s</td></tr>"
	assert_equal "$(cdp_eval "[...document.querySelectorAll('h2')].map(h => h.textContent).join()")" \
		Jobs,Hosts,Types,Pools,Workers
	# the workers without the pool, each with the age of its heartbeat
	wait_until 10 page_workers_are "worker.$HOST.1,worker.$HOST.2,worker.$HOST.3"
	[[ "$(page_html components)" =~ \<th\ class=\"age\"\>Age\</th\>.*\<tr\ data-name=\"worker\.$HOST\.1\"\>\<td\ class=\"name\"\>worker\.$HOST\.1\</td\>\<td\ class=\"type\"\>worker\</td\>.*\<td\ class=\"age\"\>[0-9.]+s\</td\>\</tr\> ]]
	[[ "$(page_html pools)" == *"<tr data-name=\"pool.$HOST\"><td class=\"pool\">pool.$HOST</td>"* ]]
	assert_equal "$(cdp_eval "document.getElementById('banner').className")" up
	# a phone's screen, for people to look at
	cdp_call Emulation.setDeviceMetricsOverride '{"width":412,"height":915,"deviceScaleFactor":1,"mobile":true}' > /dev/null
	cdp_call Page.captureScreenshot '{"format":"png"}' | jq -r .result.data | base64 -d > monitor.png
	[ "$(head -c 8 monitor.png | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	cp monitor.png "$MARO_BIN/../monitor.png"
	# the job ends, and leaves with its master: from the page too, never reloaded
	touch "$GATE"
	wait_until 15 test -s rc
	assert_equal "$(cat rc)" 3
	assert_equal "$(wc -l < out)" 999
	grep -q 'line 7 of the input given up after 1 failed attempt' scatter.err
	assert_equal "$(maro-peers --status -f json | jq -c '[.jobs, .members]')" '[[],4]'
	run -0 --separate-stderr maro-peers --status
	assert_equal "${lines[0]}" "hosts 1, members 4, CPUs $(nproc)"
	wait_until 10 page_jobs_are '<td class="none">none</td>'
	assert_equal "$(cdp_eval "performance.getEntriesByType('navigation').length + ':' + performance.getEntriesByType('navigation')[0].type")" \
		1:navigate
	cdp_close
}

@test "-f prometheus: a registry that does not answer is maro_registry_up 0, exit 69; only with --status, not with --watch" {
	run --separate-stderr maro-peers --registry redis://127.0.0.1:1/0 --status -f prometheus
	assert_failure 69
	assert_output "# HELP maro_registry_up 1 when the group's registry answered the last listing, 0 when it did not.
# TYPE maro_registry_up gauge
maro_registry_up{group=\"$MARO_GROUP\"} 0"
	[[ "$stderr" == *"cannot connect to redis"* ]]
	run --separate-stderr maro-peers -f prometheus
	assert_failure 2
	[[ "$stderr" == *"-f prometheus is a form of --status"* ]]
	run --separate-stderr maro-peers --status --watch -f prometheus
	assert_failure 2
	run --separate-stderr maro-peers --serve 0 --watch
	assert_failure 2
	[[ "$stderr" == *"--serve does not go with --watch or --status"* ]]
}

@test "--serve: the page, /status.json and /metrics on the loopback; GET and HEAD only; 404 elsewhere" {
	need promtool prometheus
	workers 1
	serve
	[[ "$URL" =~ ^http://127\.0\.0\.1:[0-9]+/$ ]]
	# the page: everything in it, nothing from elsewhere
	run -0 curl -sS -D head "$URL"
	assert_output --partial '<table id="components">'
	assert_output --partial 'fetch("status.json"'
	refute_output --regexp '(src|href)="(https?:)?//'
	grep -qi '^content-type: text/html; charset=utf-8' head
	grep -qi "^content-security-policy: default-src 'none'" head
	# the summary, as --status -f json, with the group and the registry's state
	run -0 curl -sS -D head "${URL}status.json"
	grep -qi '^content-type: application/json' head
	[ "$(echo "$output" | jq -c '[.group, .registry_up, .members, .types.worker, .components[0].name]')" = \
		"[\"$MARO_GROUP\",true,1,1,\"worker.1\"]" ]
	[ "$(echo "$output" | jq -c 'del(.group, .registry_up) | keys')" = "$(maro-peers --status -f json | jq -c keys)" ]
	run -0 curl -sS -D head "${URL}metrics"
	grep -qi '^content-type: text/plain; version=0.0.4' head
	assert_line "maro_registry_up{group=\"$MARO_GROUP\"} 1"
	assert_line "maro_component_up{group=\"$MARO_GROUP\",name=\"worker.1\",type=\"worker\",host=\"$HOST\"} 1"
	printf '%s\n' "$output" | promtool check metrics
	# HEAD: the headers alone
	run -0 curl -sS -I "${URL}metrics"
	assert_line --partial '200 OK'
	# read-only: any other method is 405, with what is allowed
	local m
	for m in POST PUT DELETE PATCH; do
		run -0 curl -sS -o /dev/null -D head -w '%{http_code}' -X "$m" --data x "${URL}metrics"
		assert_output 405
		grep -qi '^allow: GET, HEAD' head
	done
	run -0 curl -sS -o /dev/null -w '%{http_code}' "${URL}nope"
	assert_output 404
	# it is still there, and says nothing on stderr
	kill -0 "$SERVE_PID"
	[ ! -s serve.err ]
}

@test "--serve: SIGTERM 143, SIGINT 130, -W 0; a bad address 2; an address it cannot have 69" {
	local pid
	for sig in TERM:143 INT:130; do
		maro-peers --serve 0 > url 2> serve.err &
		pid=$!
		BG_PIDS+=("$pid")
		wait_until 10 has_lines url 1
		kill -"${sig%:*}" "$pid"
		wait_exit "$pid" 10
		[ "$status" -eq "${sig#*:}" ]
	done
	run -0 timeout 10 maro-peers --serve 0 -W 0.3s
	assert_output --regexp '^http://127\.0\.0\.1:[0-9]+/$'
	local bad
	for bad in '' 70000 x 'localhost:' ':80' '::1:80' '[::1' 'a:b:c'; do
		run --separate-stderr maro-peers --serve "$bad"
		[ "$status" -eq 2 ] || fail "--serve '$bad': status $status"
		[[ "$stderr" == *"bad address '$bad'"* ]]
	done
	# the port of a server that listens already
	serve
	local port=${URL##*:}
	port=${port%/}
	run --separate-stderr timeout 10 maro-peers --serve "$port"
	assert_failure 69
	[[ "$stderr" == "maro-peers: cannot listen on $port: Address already in use" ]]
	# an address that is not this host's (TEST-NET-1)
	run --separate-stderr timeout 10 maro-peers --serve 192.0.2.1:9464
	assert_failure 69
	[[ "$stderr" == *"cannot listen on 192.0.2.1:9464: Cannot assign requested address"* ]]
}

# prom_query QUERY: the value of the first sample Prometheus gives for QUERY
prom_query() {
	curl -sS --get --data-urlencode "query=$1" "$PROM/api/v1/query" | jq -r '.data.result[0].value[1] // empty'
}
prom_is() { [ "$(prom_query "$1")" = "$2" ]; }
prom_ready() { curl -sf "$PROM/-/ready" > /dev/null; }

# start_prometheus TARGET: a Prometheus server on a free loopback port that
# scrapes TARGET every second; its URL in $PROM
start_prometheus() {
	local port try
	cat > prom.yml <<-EOF
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	scrape_configs:
	  - job_name: maro
	    static_configs:
	      - targets: ['$1']
	EOF
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		PROM=http://127.0.0.1:$port
		bg 60 prometheus --config.file=prom.yml --storage.tsdb.path=tsdb."$try" \
			--web.listen-address="127.0.0.1:$port" > prom.log 2>&1
		# ready, or gone (the port was taken: another one)
		wait_until 15 sh -c "curl -sf $PROM/-/ready > /dev/null || ! kill -0 $BG_PID" || return 1
		if prom_ready; then return 0; fi
	done
	cat prom.log >&2
	return 1
}

@test "a real Prometheus scrapes --serve: the tasks a scatter had done, per worker and in all, as counters" {
	need prometheus prometheus
	workers 2
	serve
	start_prometheus "$(echo "$URL" | sed 's|^http://||; s|/$||')"
	run -0 timeout 30 sh -c 'seq 40 | maro-scatter -P worker -t t --json-lines -W 20s -f payload | wc -l'
	assert_output 40
	wait_until 10 sh -c "[ \$(maro-peers --status -f json | jq '.type_stats.worker.done') = 40 ]"
	local g="group=\"$MARO_GROUP\""
	# the first sample takes a few seconds: polled, bounded
	wait_until 30 prom_is "sum(maro_tasks_done_total{$g})" 40
	local w
	for w in 1 2; do
		wait_until 10 prom_is "maro_tasks_done_total{$g,name=\"worker.$w\",type=\"worker\",host=\"$HOST\"}" \
			"$(done_of "worker.$w")"
	done
	prom_is "maro_registry_up{$g}" 1
	prom_is "count(maro_component_up{$g,type=\"worker\"})" 2
	prom_is "sum(maro_tasks_failed_total{$g})" 0
	prom_is "sum(maro_tasks_in_flight{$g})" 0
	# the scrapes went well
	prom_is 'up{job="maro"}' 1
}

# evals: how many EVALs the suite's Redis has run (a listing is one)
evals() {
	redis-cli -p "$(cat "$BATS_FILE_TMPDIR/redis/redis.port")" info commandstats |
		sed -n 's/^cmdstat_eval:calls=\([0-9]*\),.*/\1/p'
}

@test "--serve: 50 requests, ten at a time, cost the registry one listing a second, not one each" {
	serve
	local n0 n1 t0 t1 s
	curl -sS -m 5 -o /dev/null "${URL}metrics"
	n0=$(evals)
	t0=$(date +%s%N)
	run -0 sh -c '{ yes "$1metrics" | head -n 25; yes "$1status.json" | head -n 25; } |
		xargs -P 10 -n 1 curl -sS -m 5 -o /dev/null -w "%{http_code}\n"' _ "$URL"
	t1=$(date +%s%N)
	n1=$(evals)
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort | uniq -c | awk '{ print $1, $2 }')" "50 200"
	# at most one listing per second begun, and the first
	s=$(( (t1 - t0) / 1000000000 + 1 ))
	[ $(( n1 - n0 )) -le $(( s + 1 )) ] || fail "$(( n1 - n0 )) listings for 50 requests in $s s"
	# a member that joins is listed within the second after
	workers 1
	wait_until 3 sh -c "curl -sS -m 2 ${URL}status.json | jq -e '.members == 1' > /dev/null"
}

@test "--serve on the loopback answers only to its own names: a page by another host name (DNS rebinding) is 403" {
	serve
	local h
	for h in localhost "localhost:$(echo "$URL" | sed 's/.*://; s|/||')" localhost:9000 LocalHost 127.0.0.1 127.0.0.1:80 '[::1]' '[::1]:8080'; do
		run -0 curl -sS -o /dev/null -w '%{http_code}' -H "Host: $h" "${URL}status.json"
		[ "$output" = 200 ] || fail "Host $h: $output"
	done
	for h in evil.example evil.example:80 127.0.0.1.evil.example localhost.evil.example 'localhost:' 'localhost:8x' '[::2]'; do
		run -0 curl -sS -D head -o body -w '%{http_code}' -H "Host: $h" "${URL}status.json"
		[ "$output" = 403 ] || fail "Host $h: $output"
		assert_equal "$(cat body)" "forbidden: this server on the loopback answers only to Host localhost, 127.0.0.1 or [::1]"
		run ! grep -q registry_up body
	done
	# the page and the metrics too
	run -0 curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$URL"
	assert_output 403
	run -0 curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "${URL}metrics"
	assert_output 403
	# HTTP/1.0 without a Host (no browser sends that) is answered
	run -0 curl -sS -0 -H 'Host:' -o /dev/null -w '%{http_code}' "${URL}status.json"
	assert_output 200
}

@test "--serve outlives a slowloris: 300 connections trickling headers; curl is answered at once, each slow one cut within 10 s" {
	need python3 python3
	serve
	local port=${URL##*:}
	port=${port%/}
	# 17 s: a connection opened as late as the client allows (4 s, on a
	# busy machine) is cut by its 10 s (and a second of the server's
	# check) before the client stops counting
	bg 30 python3 "$MARO_TOP/tests/tools/slowloris" "$port" 300 1 17 ready > loris.out
	local loris=$BG_PID
	wait_until 30 test -s ready
	local i
	for i in 1 2 3; do
		run -0 curl -sS -m 3 -o /dev/null -w '%{http_code}' "${URL}status.json"
		assert_output 200
	done
	wait_exit "$loris" 25
	# every slow connection ended by the server, none later than its 10 s
	run -0 cat loris.out
	[[ "$output" =~ ^closed\ ([0-9]+)\ of\ ([0-9]+),\ longest\ ([0-9.]+)$ ]]
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || fail "$output"
	[ "${BASH_REMATCH[2]}" -gt 192 ] || fail "$output"
	awk -v l="${BASH_REMATCH[3]}" 'BEGIN { exit !(l < 12) }' || fail "a slow connection lived ${BASH_REMATCH[3]} s"
	run -0 curl -sS -m 3 -o /dev/null -w '%{http_code}' "${URL}status.json"
	assert_output 200
	kill -0 "$SERVE_PID"
}

@test "a Redis outage: the server starts in one and lives through others, answers within its bound, maro_registry_up 0, the page says so" {
	local port up="maro_registry_up{group=\"$MARO_GROUP\"}"
	port=$(sh "$MARO_TOP/scripts/test-redis" start "$BATS_TEST_TMPDIR/r2")
	export MARO_REGISTRY="redis://127.0.0.1:$port/0"
	# started while the registry is down: it serves, and says so
	sh "$MARO_TOP/scripts/test-redis" stop "$BATS_TEST_TMPDIR/r2"
	serve
	run -0 curl -sS -m 5 "${URL}metrics"
	assert_line "$up 0"
	grep -q "cannot connect to redis.*(serving all the same)" serve.err
	sh "$MARO_TOP/scripts/test-redis" start "$BATS_TEST_TMPDIR/r2" "$port" > /dev/null
	wait_until 10 sh -c "curl -sS -m 5 ${URL}metrics | grep -qx '$up 1'"
	workers 1
	# a listing answers for a second (MARO_MONITOR_FRESH_US): the worker is in the next
	wait_until 5 sh -c "curl -sS -m 5 ${URL}metrics | grep -qF 'name=\"worker.1\"'"
	run -0 curl -sS -m 5 "${URL}metrics"
	assert_line "maro_component_up{group=\"$MARO_GROUP\",name=\"worker.1\",type=\"worker\",host=\"$HOST\"} 1"
	# hung: each request waits on it 1 s at most, once the listing before is a second old
	STOPPED=$(cat "$BATS_TEST_TMPDIR/r2/redis.pid.launch")
	kill -STOP "$STOPPED"
	# its 1 s, not curl's 5 s nor the registry's own timeouts: the best of
	# up to three scrapes (each after the listing before went stale), for
	# a machine busy with other suites can be seconds late with any one
	local t0 ms best=99999 try
	for try in 1 2 3; do
		sleep 1.1
		t0=$(date +%s%N)
		run -0 curl -sS -m 5 "${URL}metrics"
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		assert_output "# HELP maro_registry_up 1 when the group's registry answered the last listing, 0 when it did not.
# TYPE maro_registry_up gauge
$up 0"
		[ "$ms" -ge "$best" ] || best=$ms
		[ "$best" -ge 2000 ] || break
	done
	# and no less: the listing waited on the registry
	[ "$best" -ge 900 ] || fail "a scrape of a hung registry took $best ms: it did not wait"
	[ "$best" -lt 2000 ] || fail "a scrape of a hung registry took $best ms at best"
	kill -CONT "$STOPPED"
	STOPPED=
	# down
	sh "$MARO_TOP/scripts/test-redis" stop "$BATS_TEST_TMPDIR/r2"
	run -0 curl -sS -m 5 "${URL}metrics"
	assert_line "$up 0"
	run -0 curl -sS -m 5 "${URL}status.json"
	[ "$(echo "$output" | jq -c '[.registry_up, (.error | test("redis"))]')" = "[false,true]" ]
	if command -v chromium > /dev/null; then
		run -0 dom
		assert_output --partial 'class="down">registry unavailable: '
	fi
	# back, on the same port: the server reads it again
	sh "$MARO_TOP/scripts/test-redis" start "$BATS_TEST_TMPDIR/r2" "$port" > /dev/null
	wait_until 10 sh -c "curl -sS -m 5 ${URL}metrics | grep -qx '$up 1'"
	kill -0 "$SERVE_PID"
}
