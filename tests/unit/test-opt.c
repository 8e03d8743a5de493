#include <getopt.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "opt.h"
#include "strv.h"
#include "unit.h"

/* The storage the rows below bind, as a tool's file-scope state. */
static struct {
	int on, mode;
	const char *word;
	struct maro_strv many;
	int64_t wait;
	int owned;		/* what own() was handed */
	char owned_val[16];
} st;

enum { OWN_KEY = 300 };

static const struct maro_opt rows[] = {
	MARO_OPT_FLAG("on", 'o', "a switch", &st.on),
	MARO_OPT_SET("fast", 0, "mode 2", &st.mode, 2),
	MARO_OPT_SET("slow", 0, "mode 1", &st.mode, 1),
	MARO_OPT_STR("word", 'w', "W", "a string", &st.word),
	MARO_OPT_STRV("many", 'm', "M", "repeated", &st.many),
	MARO_OPT_DURATION("wait", 0, "DUR", "a duration", &st.wait),
	MARO_OPT_OWN("own", 0, "X", "the tool's handler takes it", OWN_KEY),
	{ 0 },
};

static const char *const synopsis[] = { "[WORD...]", NULL };

static const struct maro_tool tool = { "a test tool", synopsis, rows, 0, MARO_TOOL_OPERANDS };

static void
own(void *arg, int key, char *val)
{
	CHECK(arg == &st);
	st.owned = key;
	snprintf(st.owned_val, sizeof st.owned_val, "%s", val);
}

void
test_opt(void)
{
	struct maro_strv v = { 0 };
	struct maro_common cm;
	char a0[] = "t", a1[] = "-o", a2[] = "--slow", a3[] = "--fast", a4[] = "-wone",
	    a5[] = "--word=two", a6[] = "-m", a7[] = "x", a8[] = "--many=y", a9[] = "--wait",
	    a10[] = "1.5s", a11[] = "--own", a12[] = "val", a13[] = "rest";
	char *argv[] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, NULL };
	int at;

	/* strv: pushes in order, keeps the pointers, frees to empty */
	CHECK(maro_strv_push(&v, a7) == 0 && maro_strv_push(&v, a13) == 0);
	CHECK(v.n == 2 && v.v[0] == a7 && v.v[1] == a13);
	maro_strv_free(&v);
	CHECK(v.n == 0 && v.v == NULL);

	/* bound rows store their values themselves; the rest go to own() */
	maro_common_init(&cm);
	optind = 0;
	at = maro_opt_parse(&tool, &cm, 14, argv, own, &st);
	CHECK(at == 13 && !strcmp(argv[at], "rest"));
	CHECK(st.on == 1);
	CHECK(st.mode == 2);	/* the last of --slow and --fast */
	CHECK(st.word == a5 + 7 && !strcmp(st.word, "two"));
	CHECK(st.many.n == 2 && st.many.v[0] == a7 && !strcmp(st.many.v[1], "y"));
	CHECK(st.wait == 1500000);
	CHECK(st.owned == OWN_KEY && !strcmp(st.owned_val, "val"));
	maro_strv_free(&st.many);
	maro_common_free(&cm);
	optind = 0;
}
