#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "message.h"
#include "opt.h"
#include "registry.h"
#include "scheduler.h"

/* The shared flags, declared once: every tool that names one gets this. */
/* A shared flag's row: its storage is struct maro_common (take_shared). */
#define SHARED(long_, letter_, arg_, help_, env_, flags_) { .name = (long_), .letter = (letter_), \
	.arg = (arg_), .help = (help_), .env = (env_), .flags = (flags_) }

/* The shared flags, declared once: every tool that names one gets this. */
static const struct maro_opt shared[MARO_SH_COUNT_] = {
	[MARO_SH_NAME] = SHARED("name", 'n', "NAME", "this component's name", "MARO_NAME", 0),
	[MARO_SH_GROUP] = SHARED("group", 'g', "GROUP", "the group (default 'maro')", "MARO_GROUP", 0),
	[MARO_SH_REGISTRY] = SHARED("registry", 0, "URL", "redis://HOST:PORT[/DB], "
	    "redis+sentinel://HOST:PORT[,...]/MASTER[/DB] or dir:PATH", "MARO_REGISTRY", 0),
	[MARO_SH_KEYFILE] = SHARED("keyfile", 0, "FILE", "the group key (CURVE): only its holders talk",
	    "MARO_KEYFILE", 0),
	[MARO_SH_TYPE] = SHARED("type", 0, "TYPE", "the type peers count with -e TYPE=N", NULL, 0),
	[MARO_SH_TAKEOVER] = SHARED("takeover", 0, NULL, "take the name from the live process holding it",
	    NULL, 0),
	[MARO_SH_PREFIX] = SHARED("prefix", 'P', "PREFIX", "every live peer whose name starts with PREFIX",
	    NULL, 0),
	[MARO_SH_EXPECT] = SHARED("expect", 'e', "TYPE=N", "first wait until N peers of TYPE are live",
	    NULL, MARO_OPT_REPEAT),
	[MARO_SH_TIMEOUT] = SHARED("timeout", 'W', "DUR", "give up after DUR (N[.N][ms|s|m|h])", NULL, 0),
	[MARO_SH_FORMAT] = SHARED("format", 'f', "FORMAT", "write cbor, json, diag or payload (default: "
	    "json on a terminal, else cbor)", NULL, 0),
	[MARO_SH_ADVERTISE] = SHARED("advertise", 0, "HOST", "the address peers reach this host at",
	    "MARO_ADVERTISE", 0),
	[MARO_SH_MAX_SIZE] = SHARED("max-size", 0, "BYTES", "the largest message taken (default 16 MiB)",
	    "MARO_MAX_SIZE", 0),
	[MARO_SH_WINDOW] = SHARED("window", 0, "N", "unacknowledged messages per peer (default 4096)",
	    "MARO_WINDOW", 0),
	[MARO_SH_QUIET] = SHARED("quiet", 'q', NULL, "say less on stderr", NULL, 0),
	[MARO_SH_VERBOSE] = SHARED("verbose", 'v', NULL, "say more on stderr", NULL, 0),	/* builtin */
};

/* Every tool's, after its table; not in the usage line but for "[-v]". */
#define BUILTIN 0x100
static const struct maro_opt builtin[] = {
	{ .name = "verbose", .letter = 'v', .help = "say more on stderr", .flags = BUILTIN,
	    .shared = MARO_SH_VERBOSE },
	{ .name = "help", .letter = 'h', .help = "print this help and exit", .key = 'h', .flags = BUILTIN },
	{ .name = "version", .letter = 'V', .help = "print the version and exit", .key = 'V',
	    .flags = BUILTIN },
};

/* The shared flags that come before a tool's own (who, where, to whom), and after. */
#define FRONT (MARO_SH(NAME) | MARO_SH(GROUP) | MARO_SH(REGISTRY) | MARO_SH(KEYFILE) | \
	MARO_SH(TYPE) | MARO_SH(TAKEOVER) | MARO_SH(PREFIX) | MARO_SH(EXPECT))
#define MAX_OPTS 64

/* getopt_long returns KEY_BASE + i for the i-th flag given by its long name. */
#define KEY_BASE 0x1000

/* The table entry as it applies: a shared one filled in from the declaration. */
static struct maro_opt
resolve(const struct maro_opt *o)
{
	struct maro_opt r;

	if (!o->shared)
		return *o;
	r = shared[o->shared];
	r.shared = o->shared;
	if (o->help)
		r.help = o->help;
	r.flags |= o->flags;
	if (r.flags & MARO_OPT_NO_SHORT)
		r.letter = 0;
	return r;
}

/*
 * A tool's flags as they apply, in --help's order: the shared ones of its
 * mask that come first, its table (where a shared flag it names takes the
 * table's place and help), the other shared ones, the built-in ones.
 */
static size_t
collect(const struct maro_tool *t, struct maro_opt out[MAX_OPTS])
{
	unsigned named = 0, mask = t->shared & ~MARO_SH(VERBOSE);
	size_t n = 0, i;
	int pass, id;

	for (i = 0; t->opts && (t->opts[i].name || t->opts[i].shared); i++)
		named |= t->opts[i].shared ? MARO_SH_BIT(t->opts[i].shared) : 0;
	if (i + MARO_SH_COUNT_ + sizeof builtin / sizeof *builtin > MAX_OPTS)
		abort();	/* a table too long for MAX_OPTS: a programming error */
	for (pass = 0; pass < 3; pass++) {
		if (pass == 1) {
			for (i = 0; t->opts && (t->opts[i].name || t->opts[i].shared); i++)
				out[n++] = resolve(&t->opts[i]);
			continue;
		}
		for (id = 1; id < MARO_SH_COUNT_; id++) {
			unsigned bit = MARO_SH_BIT(id);

			if (!(mask & bit) || (named & bit) || !!(FRONT & bit) != (pass == 0))
				continue;
			out[n] = shared[id];
			out[n++].shared = id;
		}
	}
	for (i = 0; i < sizeof builtin / sizeof *builtin; i++)
		out[n++] = builtin[i];
	return n;
}

/* What the registry tells (registry.h): level 0 under -v, 1 always. */
static void
registry_notice(int level, const char *msg)
{
	if (level)
		maro_warn("%s", msg);
	else
		maro_info("%s", msg);
}

void
maro_common_init(struct maro_common *cm)
{
	maro_registry_notice = registry_notice;
	memset(cm, 0, sizeof *cm);
	cm->timeout = -1;
	cm->format = isatty(STDOUT_FILENO) ? MARO_FORMAT_JSON : MARO_FORMAT_CBOR;
}

void
maro_common_free(struct maro_common *cm)
{
	free(cm->expect);
	cm->expect = NULL;
	cm->nexpect = 0;
}

static void
help_line(const struct maro_opt *o)
{
	char left[64];
	int n;

	n = snprintf(left, sizeof left, "  %c%c%s--%s%s%s%s%s", o->letter ? '-' : ' ',
	    o->letter ? o->letter : ' ', o->letter ? ", " : "  ", o->name,
	    o->arg ? (o->flags & MARO_OPT_OPTIONAL ? "[=" : " ") : "", o->arg ? o->arg : "",
	    o->arg && (o->flags & MARO_OPT_OPTIONAL) ? "]" : "", o->flags & MARO_OPT_REPEAT ? "..." : "");
	if (n >= 28)
		printf("%s\n%28s", left, "");
	else
		printf("%-28s", left);
	printf("%s", o->help);
	if (o->env)
		printf(" [$%s]", o->env);
	putchar('\n');
}

/* Adds one word to a usage line, wrapping at 80 columns under the first word. */
static void
word(int *col, const char *w)
{
	int indent = (int)strlen(maro_progname) + 8;

	if (*col + 1 + (int)strlen(w) > 80 && *col > indent) {
		printf("\n%*s", indent, "");
		*col = indent;
	} else {
		putchar(' ');
		(*col)++;
	}
	*col += printf("%s", w);
}

/* The first usage form: every flag but the built-in ones, in --help's order. */
static void
usage_line(const struct maro_tool *t, const struct maro_opt *all, size_t n)
{
	size_t i;
	char w[128];
	int col = printf("usage: %s", maro_progname);

	for (i = 0; i < n; i++) {
		const struct maro_opt *o = &all[i];
		int needed = o->shared == MARO_SH_NAME && (t->flags & MARO_TOOL_NEEDS_NAME);
		char flag[64];

		if (o->flags & (MARO_OPT_IN_FORM | MARO_OPT_HIDDEN | BUILTIN))
			continue;
		if (o->letter)
			snprintf(flag, sizeof flag, "-%c", o->letter);
		else
			snprintf(flag, sizeof flag, "--%s", o->name);
		snprintf(w, sizeof w, "%s%s%s%s%s%s%s", needed ? "" : "[", flag,
		    o->arg ? (o->flags & MARO_OPT_OPTIONAL ? "[=" : " ") : "", o->arg ? o->arg : "",
		    o->arg && (o->flags & MARO_OPT_OPTIONAL) ? "]" : "", needed ? "" : "]",
		    o->flags & MARO_OPT_REPEAT ? "..." : "");
		word(&col, w);
	}
	word(&col, "[-v]");
	if (t->synopsis[0] && *t->synopsis[0])
		word(&col, t->synopsis[0]);
	putchar('\n');
}

void
maro_opt_help(const struct maro_tool *t)
{
	struct maro_opt all[MAX_OPTS];
	size_t i, n = collect(t, all);

	usage_line(t, all, n);
	/* a form that starts with a blank goes on from the one before */
	for (i = 1; t->synopsis[0] && t->synopsis[i]; i++)
		if (t->synopsis[i][0] == ' ')
			printf("%*s%s\n", (int)strlen(maro_progname) + 8, "", t->synopsis[i] + 1);
		else
			printf("       %s %s\n", maro_progname, t->synopsis[i]);
	printf("       %s -h | -V\n\n%s\n\noptions:\n", maro_progname, t->summary);
	for (i = 0; i < n; i++)
		if (!(all[i].flags & MARO_OPT_HIDDEN))
			help_line(&all[i]);
	printf("\nThe manual: man %s\n", maro_progname);
}

/*
 * One line per flag, for shell completion: "--name=" takes an argument;
 * one whose argument is optional is given both ways.
 */
static void
list_options(const struct maro_tool *t)
{
	struct maro_opt all[MAX_OPTS];
	size_t i, n = collect(t, all);

	for (i = 0; i < n; i++) {
		if (all[i].flags & MARO_OPT_HIDDEN)
			continue;
		if (all[i].arg && (all[i].flags & MARO_OPT_OPTIONAL))
			printf("--%s\n", all[i].name);
		printf("--%s%s\n", all[i].name, all[i].arg ? "=" : "");
		if (all[i].letter)
			printf("-%c\n", all[i].letter);
	}
}

/* --help and --version print to stdout and end the run. */
static void
builtin_flag(const struct maro_tool *t, int key)
{
	if (key == 'h')
		maro_opt_help(t);
	else
		maro_print_version();
	exit(maro_cli_close_stdout(MARO_EXIT_OK));
}

static void
take_shared(struct maro_common *cm, int id, char *val)
{
	switch (id) {
	case MARO_SH_NAME: cm->name = val; break;
	case MARO_SH_GROUP: cm->co.group = val; break;
	case MARO_SH_REGISTRY: cm->co.registry_url = val; break;
	case MARO_SH_KEYFILE: cm->co.keyfile = val; break;
	case MARO_SH_TYPE: cm->type = val; break;
	case MARO_SH_TAKEOVER: cm->takeover = 1; break;
	case MARO_SH_PREFIX: cm->prefix = val; break;
	case MARO_SH_EXPECT: {
		struct maro_expect *ex = realloc(cm->expect, (cm->nexpect + 1) * sizeof *ex);

		if (!ex)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		cm->expect = ex;
		if (maro_expect_parse(val, &ex[cm->nexpect++]) < 0)
			maro_usage_error("invalid -e '%s' (use TYPE=N, N at least 1)", val);
		break;
	}
	case MARO_SH_TIMEOUT: cm->timeout = maro_cli_duration("-W", val); break;
	case MARO_SH_FORMAT: cm->format = maro_cli_format(val); break;
	case MARO_SH_ADVERTISE: cm->co.advertise = val; break;
	case MARO_SH_MAX_SIZE: cm->co.max_message = maro_cli_count("--max-size", val); break;
	case MARO_SH_WINDOW: cm->co.window = maro_cli_count("--window", val); break;
	case MARO_SH_QUIET: cm->quiet = 1; break;
	case MARO_SH_VERBOSE: maro_verbose = 1; break;
	}
}

/* A bound flag's value into its storage (opt.h, MARO_OPT_SET and the rest). */
static void
take_bound(const struct maro_opt *o, char *val)
{
	char flag[64];

	switch (o->bind) {
	case MARO_BIND_NONE: break;
	case MARO_BIND_INT: *(int *)o->to = o->value; break;
	case MARO_BIND_STR: *(const char **)o->to = val; break;
	case MARO_BIND_STRV:
		if (maro_strv_push(o->to, val) < 0)
			maro_die(MARO_EXIT_SOFTWARE, "out of memory");
		break;
	case MARO_BIND_DURATION:
		if (o->letter)
			snprintf(flag, sizeof flag, "-%c", o->letter);
		else
			snprintf(flag, sizeof flag, "--%s", o->name);
		*(int64_t *)o->to = maro_cli_duration(flag, val);
		break;
	}
}

/* What the scheduler layer resolved: cm points here. */
static char sched_name[MARO_NAME_MAX + 1], sched_group[MARO_NAME_MAX + 1];
static char sched_advertise[MARO_HOST_MAX + 1];

/* env's value, NULL when unset or empty */
static const char *
env_set(const char *name)
{
	const char *s = getenv(name);

	return s && *s ? s : NULL;
}

/*
 * The one place where what was not given is filled in, with one
 * precedence: the flag, then the MARO_* variable, then the scheduler's
 * environment (scheduler.h: Slurm's rank, node, job and launch node), then
 * the default.  A name (flag or MARO_NAME) is a template: %r, %h, %%.
 */
static void
resolve_common(const struct maro_tool *t, struct maro_common *cm, int has_name, int has_window)
{
	const char *given;

	if (has_name && !cm->name)
		cm->name = getenv("MARO_NAME");
	if (cm->name && !*cm->name)
		cm->name = NULL;	/* an empty name is none */
	if (cm->name && strchr(cm->name, '%')) {
		given = cm->name;
		if (maro_scheduler_name(given, sched_name, sizeof sched_name) < 0)
			maro_usage_error(errno == ENOENT ? "name '%s': %%r is the task's rank, and there "
			    "is none (SLURM_PROCID under srun, MARO_JOB under maro-pool)" :
			    errno == ENAMETOOLONG ? "name '%s' is too long once expanded" :
			    "name '%s': '%%' is followed by r, h or %% only", given);
		cm->name = sched_name;
	}
	if ((t->flags & MARO_TOOL_NEEDS_NAME) && !cm->name)
		maro_usage_error("a name is required (-n NAME or MARO_NAME)");
	if (cm->name && !maro_name_valid(cm->name))
		maro_usage_error("invalid name '%s' (letters, digits, '.', '_', '-', not first '.' or '_')",
		    cm->name);
	if (cm->type && !maro_name_valid(cm->type))
		maro_usage_error("invalid type '%s'", cm->type);
	if (cm->prefix && (!maro_name_valid(cm->prefix) || cm->prefix[0] == '~'))
		maro_usage_error("invalid prefix '%s' (letters, digits, '.', '_', '-')", cm->prefix);
	/* MARO_WINDOW is read here so that a bad one is a usage error naming it */
	if (has_window && cm->co.window == 0 && getenv("MARO_WINDOW") && *getenv("MARO_WINDOW"))
		cm->co.window = maro_cli_count("MARO_WINDOW", getenv("MARO_WINDOW"));
	/* the scheduler's, where neither flag nor variable said: the job's group, */
	if (!cm->co.group && !env_set("MARO_GROUP"))
		cm->co.group = maro_scheduler_group(sched_group, sizeof sched_group);
	/* and on a job over several nodes, the address the other nodes reach */
	if (!cm->co.advertise && !env_set("MARO_ADVERTISE"))
		cm->co.advertise = maro_scheduler_advertise(sched_advertise, sizeof sched_advertise);
}

int
maro_opt_parse(const struct maro_tool *t, struct maro_common *cm, int argc, char **argv,
    void (*own)(void *arg, int key, char *val), void *arg)
{
	struct maro_opt all[MAX_OPTS];
	struct option lo[MAX_OPTS + 2];
	char shorts[3 * MAX_OPTS + 2], *sp = shorts;
	size_t i, n = collect(t, all);
	int ch, has_name = 0, has_window = 0;

	memset(lo, 0, sizeof lo);
	if (t->flags & MARO_TOOL_STOP_AT_OPERAND)
		*sp++ = '+';
	for (i = 0; i < n; i++) {
		lo[i].name = all[i].name;
		lo[i].has_arg = !all[i].arg ? no_argument :
		    all[i].flags & MARO_OPT_OPTIONAL ? optional_argument : required_argument;
		lo[i].val = KEY_BASE + (int)i;
		if (all[i].letter) {
			*sp++ = (char)all[i].letter;
			if (all[i].arg)
				*sp++ = ':';
			if (all[i].arg && (all[i].flags & MARO_OPT_OPTIONAL))
				*sp++ = ':';
		}
		has_name |= all[i].shared == MARO_SH_NAME;
		has_window |= all[i].shared == MARO_SH_WINDOW;
	}
	lo[n].name = "list-options";
	lo[n].val = KEY_BASE + (int)n;
	*sp = '\0';

	while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct maro_opt *o = NULL;

		if (ch >= KEY_BASE && ch < KEY_BASE + (int)n) {
			o = &all[ch - KEY_BASE];
		} else if (ch == KEY_BASE + (int)n) {
			list_options(t);
			exit(maro_cli_close_stdout(MARO_EXIT_OK));
		} else {
			for (i = 0; i < n && !o; i++)
				if (all[i].letter == ch)
					o = &all[i];
		}
		if (!o)
			maro_usage_error("invalid option");
		if (o->shared)
			take_shared(cm, o->shared, optarg);
		else if (o->bind)
			take_bound(o, optarg);
		else if (o->key == 'h' || o->key == 'V')
			builtin_flag(t, o->key);
		else
			own(arg, o->key, optarg);
	}
	if (!(t->flags & MARO_TOOL_OPERANDS) && optind < argc)
		maro_usage_error("unexpected argument '%s'", argv[optind]);
	resolve_common(t, cm, has_name, has_window);
	return optind;
}
