#include <stdio.h>
#include <string.h>
#include <time.h>

#include "unit.h"
#include "view.h"

static void
entry(struct maro_entry *e, const char *name, const char *type, const char *host, long pid)
{
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", name);
	snprintf(e->type, sizeof e->type, "%s", type);
	snprintf(e->host, sizeof e->host, "%s", host);
	snprintf(e->endpoint, sizeof e->endpoint, "ipc:///run/%ld", pid);
	e->pid = (pid_t)pid;
	e->started_ms = 1000 * pid;
	e->ncpu = 2;
}

/* What maro_view_diff told, as "leave a,join b," */
static int
tell(void *arg, const struct maro_entry *e, const char *event)
{
	struct maro_buf *b = arg;

	maro_buf_printf(b, "%s %s,", event, e->name);
	return !strcmp(e->name, "stop") ? 7 : 0;
}

/*
 * The jobs: cur[0..3) as test_view leaves them, then a master's private
 * entry with a job (last, as maro_registry_list_jobs sorts it), and one
 * whose job cannot be read.
 */
static void
view_jobs(const struct maro_entry *cur)
{
	struct maro_entry v[5];
	struct maro_buf b = { 0 };
	const char *p;

	memcpy(v, cur, 3 * sizeof *v);
	entry(&v[3], "~master.1a2b3c4d", "master", "m\"1", 40);
	v[3].heartbeat_age_ms = 300;
	snprintf(v[3].job, sizeof v[3].job, "start=%lld total=1000 read=1000 done=990 failed=2 "
	    "gaveup=1 open=4 rate=99.00 eta=1", (long long)time(NULL) - 10);
	entry(&v[4], "~x.1", "x", "h", 41);
	snprintf(v[4].job, sizeof v[4].job, "start=x");
	/* JSON: the jobs first; the private entries are no members */
	CHECK(maro_view_status(&b, v, 5, 1) == 0 && !maro_buf_cstr(&b));
	p = (const char *)b.p;
#define JOB_HEAD "{\"jobs\":[{\"name\":\"master.1a2b3c4d\",\"host\":\"m\\\"1\",\"pid\":40,"
	CHECK(!strncmp(p, JOB_HEAD, sizeof JOB_HEAD - 1));
	CHECK(strstr(p, "\"total\":1000,\"read\":1000,\"done\":990,\"failed\":2,\"gaveup\":1,"
	    "\"open\":4,\"rate\":99.0,\"eta\":1,\"heartbeat_age_ms\":300}],\"hosts\":3,\"members\":3,") != NULL);
	CHECK(strstr(p, "\"master\"") == NULL && strstr(p, "\"x\"") == NULL);
	maro_buf_reset(&b);
	/* a total not known yet: null, as the time left */
	snprintf(v[3].job, sizeof v[3].job, "start=1 total=- read=7 done=0 open=7 eta=-");
	CHECK(maro_view_status(&b, v, 4, 1) == 0 && !maro_buf_cstr(&b));
	CHECK(strstr((char *)b.p, "\"total\":null,\"read\":7,") != NULL);
	CHECK(strstr((char *)b.p, "\"eta\":null,") != NULL);
	maro_buf_reset(&b);
	/* text: the table of jobs first, the total read so far with a '+' */
	CHECK(maro_view_status(&b, v, 4, 0) == 0 && !maro_buf_cstr(&b));
	p = (const char *)b.p;
#define JOB_COLS "JOB                       HOST                  STARTED       TOTAL        DONE   FAILED" \
	"   GAVEUP     OPEN     DONE/s      ETA     AGE\n"
	CHECK(!strncmp(p, JOB_COLS, sizeof JOB_COLS - 1));
	/* started another day (1970, in any time zone): its date */
	CHECK(!strncmp(p + sizeof JOB_COLS - 1, "master.1a2b3c4d           m\"1               01-01 ", 50) ||
	    !strncmp(p + sizeof JOB_COLS - 1, "master.1a2b3c4d           m\"1               12-31 ", 50));
	CHECK(strstr(p, "          7+           0        0        0        7        0.0        -    0.3s\n\n"
	    "hosts 3, members 3, CPUs 6\n") != NULL);
	maro_buf_reset(&b);
	/* Prometheus: the jobs first, their labels escaped, what is not known left out */
	snprintf(v[3].job, sizeof v[3].job, "start=1795000000 total=1000 read=1000 done=990 failed=2 "
	    "gaveup=1 open=4 rate=99.00 eta=1");
	CHECK(maro_view_prometheus(&b, v, 5, "g1") == 0 && !maro_buf_cstr(&b));
	p = (const char *)b.p;
	CHECK(strstr(p, "maro_registry_up{group=\"g1\"} 1\n# HELP maro_job_tasks ") != NULL);
	CHECK(strstr(p, "\n# TYPE maro_job_tasks gauge\n"
	    "maro_job_tasks{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\",state=\"done\"} 990\n"
	    "maro_job_tasks{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\",state=\"gaveup\"} 1\n"
	    "maro_job_tasks{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\",state=\"open\"} 4\n"
	    "maro_job_tasks{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\",state=\"waiting\"} 5\n") != NULL);
	CHECK(strstr(p, "\n# TYPE maro_job_attempts_failed_total counter\n"
	    "maro_job_attempts_failed_total{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\"} 2\n") != NULL);
	CHECK(strstr(p, "\nmaro_job_input_tasks{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\"} 1000\n") != NULL);
	CHECK(strstr(p, "\nmaro_job_start_time_seconds{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\"} 1795000000\n") != NULL);
	CHECK(strstr(p, "\nmaro_job_eta_seconds{group=\"g1\",name=\"master.1a2b3c4d\",host=\"m\\\"1\"} 1\n") != NULL);
	CHECK(strstr(p, "name=\"~") == NULL && strstr(p, "type=\"master\"") == NULL);
	CHECK(strstr(p, "\nmaro_members{group=\"g1\",type=\"pool\"} 1\n") != NULL);
	maro_buf_reset(&b);
	snprintf(v[3].job, sizeof v[3].job, "start=1 done=0 total=-");
	CHECK(maro_view_prometheus(&b, v, 4, "g1") == 0 && !maro_buf_cstr(&b));
	CHECK(strstr((char *)b.p, "maro_job_tasks{") != NULL && strstr((char *)b.p, "maro_job_input_tasks") == NULL &&
	    strstr((char *)b.p, "maro_job_eta_seconds") == NULL);
	maro_buf_free(&b);
}

void
test_view(void)
{
	struct maro_entry old[3], cur[3];
	struct maro_buf b = { 0 };

	CHECK(maro_view_info_count("jobs=4 running=3 restarts=1", "running") == 3);
	CHECK(maro_view_info_count("xjobs=4 jobs=2", "jobs") == 2);
	CHECK(maro_view_info_count("jobs=4", "gaveup") == -1);
	CHECK(maro_view_info_count("jobsx=4", "jobs") == -1);

	/* w.1 stays, w.2 is taken over by another process, w.3 leaves, w.4 joins */
	entry(&old[0], "w.1", "w", "h", 1);
	entry(&old[1], "w.2", "w", "h", 2);
	entry(&old[2], "w.3", "w", "h", 3);
	entry(&cur[0], "w.1", "w", "h", 1);
	entry(&cur[1], "w.2", "w", "h", 22);
	cur[1].started_ms = old[1].started_ms;	/* only the pid tells them apart */
	memcpy(cur[1].endpoint, old[1].endpoint, sizeof cur[1].endpoint);
	entry(&cur[2], "w.4", "w", "h", 4);
	CHECK(maro_view_diff(old, 3, cur, 3, tell, &b) == 0 && !maro_buf_cstr(&b));
	CHECK(!strcmp((char *)b.p, "leave w.2,leave w.3,join w.2,join w.4,"));
	maro_buf_reset(&b);
	CHECK(maro_view_diff(NULL, 0, cur, 1, tell, &b) == 0 && !maro_buf_cstr(&b) &&
	    !strcmp((char *)b.p, "join w.1,"));
	maro_buf_reset(&b);
	/* the first nonzero answer stops it */
	entry(&cur[1], "stop", "stop", "h", 5);
	CHECK(maro_view_diff(NULL, 0, cur, 3, tell, &b) == 7 && !maro_buf_cstr(&b) &&
	    !strcmp((char *)b.p, "join w.1,join stop,"));
	maro_buf_reset(&b);

	/* the table: columns as wide as their widest cell */
	entry(&cur[1], "worker.10", "worker", "h", 2);
	CHECK(maro_view_table(&b, cur, 2, 1, 0) == 0 && !maro_buf_cstr(&b));
	CHECK(!strncmp((char *)b.p, "NAME       TYPE    HOST  ENDPOINT ", 34));
	CHECK(strstr((char *)b.p, "\nworker.10  worker  h     ipc:///run/2 ") != NULL);
	maro_buf_reset(&b);
	CHECK(maro_view_event(&b, &cur[0], "leave", 1) == 0 && !maro_buf_cstr(&b) &&
	    !strcmp((char *)b.p, "{\"event\":\"leave\",\"name\":\"w.1\"}\n"));
	maro_buf_reset(&b);

	/* the summary: two hosts, one pool; CPUs counted once per host */
	entry(&cur[2], "pool.h", "pool", "g", 9);
	snprintf(cur[2].info, sizeof cur[2].info, "jobs=2 running=1 restarts=0 gaveup=1");
	CHECK(maro_view_status(&b, cur, 3, 1) == 0 && !maro_buf_cstr(&b));
	CHECK(!strncmp((char *)b.p, "{\"jobs\":[],\"hosts\":2,\"members\":3,\"cpus\":4,", 42));
	CHECK(strstr((char *)b.p, "\"types\":{\"pool\":1,\"w\":1,\"worker\":1}") != NULL);
	CHECK(strstr((char *)b.p, "\"jobs\":2,\"running\":1,\"restarts\":0,\"gaveup\":1}") != NULL);
	maro_buf_reset(&b);
	CHECK(maro_view_status(&b, cur, 3, 0) == 0 && !maro_buf_cstr(&b));
	CHECK(!strncmp((char *)b.p, "hosts 2, members 3, CPUs 4\n", 27));
	CHECK(strstr((char *)b.p, "\npool.h                    g                     2        1         0       1\n") != NULL);
	maro_buf_reset(&b);

	/* Prometheus: label values escaped, counters where stats are, pools from their info */
	snprintf(cur[0].host, sizeof cur[0].host, "a\"b\\c\nd");
	snprintf(cur[0].stats, sizeof cur[0].stats, "in=5 out=4 bin=50 bout=40 done=3 failed=1 resent=0");
	CHECK(maro_view_prometheus(&b, cur, 3, "g1") == 0 && !maro_buf_cstr(&b));
	CHECK(!strncmp((char *)b.p, "# HELP maro_registry_up ", 24));
	CHECK(strstr((char *)b.p, "\nmaro_registry_up{group=\"g1\"} 1\n") != NULL);
	CHECK(strstr((char *)b.p, "\n# TYPE maro_tasks_done_total counter\n"
	    "maro_tasks_done_total{group=\"g1\",name=\"w.1\",type=\"w\",host=\"a\\\"b\\\\c\\nd\"} 3\n") != NULL);
	CHECK(strstr((char *)b.p, "\nmaro_bytes_in_total{group=\"g1\",name=\"w.1\"") != NULL);
	/* a gauge only the members that keep it have */
	CHECK(strstr((char *)b.p, "maro_tasks_in_flight") == NULL);
	CHECK(strstr((char *)b.p, "\nmaro_pool_jobs_gaveup_total{group=\"g1\",name=\"pool.h\",type=\"pool\",host=\"g\"} 1\n") != NULL);
	CHECK(strstr((char *)b.p, "\nmaro_members{group=\"g1\",type=\"pool\"} 1\n") != NULL);
	CHECK(strstr((char *)b.p, "\nmaro_host_cpus{group=\"g1\",host=\"g\"} 2\n") != NULL);
	maro_buf_reset(&b);
	view_jobs(cur);

	/* the registry did not answer: that alone */
	CHECK(maro_view_prometheus(&b, NULL, -1, "g1") == 0 && !maro_buf_cstr(&b));
	CHECK(!strcmp((char *)b.p, "# HELP maro_registry_up 1 when the group's registry answered the last "
	    "listing, 0 when it did not.\n# TYPE maro_registry_up gauge\nmaro_registry_up{group=\"g1\"} 0\n"));
	maro_buf_free(&b);
}
