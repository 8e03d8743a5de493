/*
 * opt: every tool's options, declared once in one table.
 *
 * A tool lists its options as a table of struct maro_opt.  From that table
 * come the getopt_long parse, the --help text, the list a shell completion
 * reads (--list-options) and what tests/options.bats checks each man page
 * against.  The flags every tool shares (identity, registry, key,
 * expectations, timeout, format, verbosity) are declared once, here and in
 * opt.c, and a tool's table names them with MARO_OPT_SHARED (-v, -h and -V
 * every tool takes without naming them): their values
 * land in struct maro_common, resolved in one place with one precedence:
 *
 *	flag > MARO_* variable > scheduler environment > default
 *
 * (the variables of the registry, group, key file, advertised host, sizes
 * and window are read by maro_ctx_open, transport.h, when the flag left
 * them unset; the name's here).  Part of the front end, like cli: a bad
 * option is a usage error, exit 2.
 */
#ifndef MARO_OPT_H
#define MARO_OPT_H

#include <stddef.h>
#include <stdint.h>

#include "expect.h"
#include "format.h"
#include "strv.h"
#include "transport.h"

/* The shared flags: a tool's table names them, opt.c declares them. */
enum maro_shared {
	MARO_SH_NAME = 1,	/* -n, --name NAME         cm->name ($MARO_NAME) */
	MARO_SH_GROUP,		/* -g, --group GROUP       cm->co.group */
	MARO_SH_REGISTRY,	/* --registry URL          cm->co.registry_url */
	MARO_SH_KEYFILE,	/* --keyfile FILE          cm->co.keyfile */
	MARO_SH_TYPE,		/* --type TYPE             cm->type */
	MARO_SH_TAKEOVER,	/* --takeover              cm->takeover */
	MARO_SH_PREFIX,		/* -P, --prefix PREFIX     cm->prefix */
	MARO_SH_EXPECT,		/* -e, --expect TYPE=N...  cm->expect[] */
	MARO_SH_TIMEOUT,	/* -W, --timeout DUR       cm->timeout */
	MARO_SH_FORMAT,		/* -f, --format FORMAT     cm->format */
	MARO_SH_ADVERTISE,	/* --advertise HOST        cm->co.advertise */
	MARO_SH_MAX_SIZE,	/* --max-size BYTES        cm->co.max_message */
	MARO_SH_WINDOW,		/* --window N              cm->co.window */
	MARO_SH_QUIET,		/* -q, --quiet             cm->quiet */
	MARO_SH_VERBOSE,	/* -v, --verbose           maro_verbose (every tool's) */
	MARO_SH_COUNT_
};

/* A set of shared flags: MARO_SH(NAME) | MARO_SH(GROUP) ... */
#define MARO_SH_BIT(id) (1u << (id))
#define MARO_SH(x) MARO_SH_BIT(MARO_SH_##x)
/* The flags of a member of a group: who it is, where, with which key. */
#define MARO_SH_MEMBER (MARO_SH(NAME) | MARO_SH(GROUP) | MARO_SH(REGISTRY) | MARO_SH(KEYFILE))
/* Of a member with an inbox: the type it counts as, and taking a name over. */
#define MARO_SH_INBOX (MARO_SH(TYPE) | MARO_SH(TAKEOVER))

/* maro_opt.flags */
enum {
	MARO_OPT_REPEAT = 1,	/* may be given more than once */
	MARO_OPT_OPTIONAL = 2,	/* the argument is optional: --flag[=ARG] */
	MARO_OPT_NO_SHORT = 4,	/* a shared flag without its short letter here */
	MARO_OPT_IN_FORM = 8,	/* the usage line shows it in synopsis[0], not among the flags */
	MARO_OPT_HIDDEN = 16,	/* an old spelling still taken: in no help and no list */
};

/* maro_opt.bind: where a flag's value goes when no handler of the tool's takes it */
enum maro_opt_bind {
	MARO_BIND_NONE,		/* the tool's handler gets key */
	MARO_BIND_INT,		/* *(int *)to = value */
	MARO_BIND_STR,		/* *(const char **)to = the argument */
	MARO_BIND_STRV,		/* the argument appended to *(struct maro_strv *)to */
	MARO_BIND_DURATION,	/* *(int64_t *)to = the argument as a duration, in us */
};

struct maro_opt {
	const char *name;	/* long name, without "--" */
	int letter;		/* short letter, or 0 */
	const char *arg;	/* the argument's name in --help, NULL: none */
	const char *help;	/* one line; for a shared flag, NULL: the shared text */
	const char *env;	/* the variable it defaults from, for --help */
	int key;		/* what the tool's handler gets: the letter or its own enum */
	unsigned flags;
	int shared;		/* an enum maro_shared: the rest comes from opt.c */
	enum maro_opt_bind bind;	/* bound storage, as git's OPT_BOOL: no handler */
	void *to;
	int value;
};

/* a flag the tool's own handler takes: own(arg, key, the argument) */
#define MARO_OPT_OWN(long_, letter_, arg_, help_, key_) { .name = (long_), .letter = (letter_), \
	.arg = (arg_), .help = (help_), .key = (key_) }

/*
 * Rows that bind their storage, an object of static duration (a tool's
 * file-scope state): the parse stores the value there itself.  p must
 * point to the type the row names (else the build warns).
 */
#define MARO_OPT_PTR_(T, p) (1 ? (p) : (T *)0)
/* a switch: sets the int *p to v (MARO_OPT_FLAG: to 1) */
#define MARO_OPT_SET(long_, letter_, help_, p, v) { .name = (long_), .letter = (letter_), \
	.help = (help_), .bind = MARO_BIND_INT, .to = MARO_OPT_PTR_(int, p), .value = (v) }
#define MARO_OPT_FLAG(long_, letter_, help_, p) MARO_OPT_SET(long_, letter_, help_, p, 1)
/* a string: the const char *p points to the argument */
#define MARO_OPT_STR(long_, letter_, arg_, help_, p) { .name = (long_), .letter = (letter_), \
	.arg = (arg_), .help = (help_), .bind = MARO_BIND_STR, .to = MARO_OPT_PTR_(const char *, p) }
/* a repeated string: each argument appended to the struct maro_strv *p */
#define MARO_OPT_STRV(long_, letter_, arg_, help_, p) { .name = (long_), .letter = (letter_), \
	.arg = (arg_), .help = (help_), .flags = MARO_OPT_REPEAT, .bind = MARO_BIND_STRV, \
	.to = MARO_OPT_PTR_(struct maro_strv, p) }
/* a duration (N[.N][ms|s|m|h]): the int64_t *p set to it in microseconds */
#define MARO_OPT_DURATION(long_, letter_, arg_, help_, p) { .name = (long_), .letter = (letter_), \
	.arg = (arg_), .help = (help_), .bind = MARO_BIND_DURATION, .to = MARO_OPT_PTR_(int64_t, p) }

/*
 * A shared flag in a tool's table, where it is to stand in --help; _AS with
 * this tool's own help text.  The tool's mask (maro_tool.shared) brings
 * the others.
 */
#define MARO_OPT_SHARED(id) { .shared = (id) }
#define MARO_OPT_SHARED_AS(id, helptext, fl) { .shared = (id), .help = (helptext), .flags = (fl) }

/* maro_tool.flags */
enum {
	MARO_TOOL_OPERANDS = 1,		/* takes operands (else one is a usage error) */
	MARO_TOOL_STOP_AT_OPERAND = 2,	/* options end at the first operand: a command follows */
	MARO_TOOL_NEEDS_NAME = 4,	/* -n NAME or MARO_NAME is required */
};

struct maro_tool {
	const char *summary;		/* one line: what the tool does */
	/*
	 * synopsis[0]: what follows the flags in the first usage form (the
	 * flags come from opts); then other forms, whole; NULL-ended
	 */
	const char *const *synopsis;
	const struct maro_opt *opts;	/* its own flags, ended by an entry without a name or shared */
	unsigned shared;		/* the shared flags it takes: MARO_SH(...) | ... */
	unsigned flags;
};

/* The values of the shared flags.  Defaults in (set them before parsing), values out. */
struct maro_common {
	const char *name, *type, *prefix;
	int takeover, quiet;
	struct maro_ctx_opts co;
	struct maro_expect *expect;
	size_t nexpect;
	int64_t timeout;		/* -W in microseconds; -1: none */
	enum maro_format format;
};

/*
 * Fills cm with the defaults: no timeout, output as JSON on a terminal and
 * as CBOR otherwise.
 */
void maro_common_init(struct maro_common *cm);
void maro_common_free(struct maro_common *cm);

/*
 * Parses argv against t: shared flags into cm, a bound flag into its
 * storage, each of the tool's other flags handed to own(arg, key, optarg); --help, --version and --list-options
 * print and exit 0; an unknown flag, a bad value or a missing name is a
 * usage error.  Then resolves cm (the name from MARO_NAME when not given)
 * and checks names, type and prefix.  Returns the index of the first
 * operand.
 */
int maro_opt_parse(const struct maro_tool *t, struct maro_common *cm, int argc, char **argv,
    void (*own)(void *arg, int key, char *val), void *arg);

/* Prints t's --help to stdout. */
void maro_opt_help(const struct maro_tool *t);

#endif
