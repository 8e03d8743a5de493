#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "bundle.h"
#include "manifest.h"
#include "unit.h"

static void test_manifest(void);

static const struct maro_bundle_limits lim = { 1 << 20, 1 << 16, 1 << 30, 0 };

/* Unpacks the n bytes of stream s into a fresh directory under base: the fault; what it said in why. */
static char why_said[sizeof ((struct maro_err *)0)->msg];

static int
unpack(const char *base, const char *s, size_t n, const char *into)
{
	char path[4096];
	struct maro_err err = { 0 };
	FILE *f = tmpfile();
	int rc;

	fwrite(s, 1, n, f);
	fflush(f);
	snprintf(path, sizeof path, "%s/%s", base, into);
	rewind(f);
	rc = maro_bundle_unpack(fileno(f), path, &lim, &err);
	fclose(f);
	snprintf(why_said, sizeof why_said, "%s", rc ? err.msg : "");
	return rc;
}

#define UNPACK(s, into) unpack(base, s, sizeof s - 1, into)

/* The cache as maro_bundle_clear opens it, from MARO_BUNDLE_CACHE, under base. */
static void
test_cache(const char *base)
{
	char path[4200], *was = getenv("MARO_BUNDLE_CACHE") ? strdup(getenv("MARO_BUNDLE_CACHE")) : NULL;
	struct maro_bundle_cleared cl;
	struct maro_err err;
	int before;

	/* a trailing slash names the same directory: not "the root directory" */
	snprintf(path, sizeof path, "%s/cache", base);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof path, "%s/cache//", base);
	setenv("MARO_BUNDLE_CACHE", path, 1);
	CHECK(maro_bundle_clear(&cl, &err) == 0);
	/* a bundle no one uses goes (the cache with it), and no descriptor of it is kept */
	snprintf(path, sizeof path, "%s/cache", base);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof path, "%s/cache/%064d", base, 7);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof path, "%s/cache/%064d/run.sh", base, 7);
	CHECK(close(open(path, O_WRONLY | O_CREAT, 0600)) == 0);
	before = unit_open_fds();
	CHECK(maro_bundle_clear(&cl, &err) == 0 && cl.removed == 1);
	CHECK(before > 0 && unit_open_fds() == before);
	/* under a directory others may write, not sticky: refused, and no descriptor kept */
	snprintf(path, sizeof path, "%s/open", base);
	CHECK(mkdir(path, 0700) == 0 && chmod(path, 0777) == 0);
	snprintf(path, sizeof path, "%s/open/cache", base);
	CHECK(mkdir(path, 0700) == 0);
	setenv("MARO_BUNDLE_CACHE", path, 1);
	before = unit_open_fds();
	CHECK(maro_bundle_clear(&cl, &err) == MARO_BUNDLE_IO && strstr(err.msg, "not sticky"));
	CHECK(before > 0 && unit_open_fds() == before);
	if (was)
		setenv("MARO_BUNDLE_CACHE", was, 1);
	else
		unsetenv("MARO_BUNDLE_CACHE");
	free(was);
}

void
test_bundle(void)
{
	char base[] = "/tmp/maro-unit-bundle.XXXXXX", path[4200], link[64];
	struct stat st;
	struct maro_bundle_srv srv;
	struct maro_err err;
	struct maro_buf out = { 0 };
	char why[300];
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[2 * crypto_hash_sha256_BYTES + 1];
	ssize_t k;
	int fd;

	if (!mkdtemp(base)) {
		CHECK(0);
		return;
	}
	/* a good one: a directory, an executable, a link inside, modes kept but set-uid and write */
	CHECK(UNPACK("maro-bundle 1\nd 0750 d\nf 4755 2 d/x\nx\nl 3 d/l\nd/xf 0600 0 e\ne\n", "ok") == 0);
	snprintf(path, sizeof path, "%s/ok/d/x", base);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0555 && st.st_size == 2);
	snprintf(path, sizeof path, "%s/ok/d", base);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0550);
	snprintf(path, sizeof path, "%s/ok/d/l", base);
	CHECK((k = readlink(path, link, sizeof link)) == 3 && !memcmp(link, "d/x", 3));
	snprintf(path, sizeof path, "%s/ok/e", base);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0400 && st.st_size == 0);
	/* depth first: an entry's directory is the last one made, or one of its ancestors */
	CHECK(UNPACK("maro-bundle 1\nd 0755 a\nd 0755 a/b\nf 0644 1 a/b/x\nxf 0644 1 a/y\nyd 0755 c\ne\n",
	    "order") == 0);
	CHECK(UNPACK("maro-bundle 1\nd 0755 a\nd 0755 b\nf 0644 1 a/x\nxe\n", "h0") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nd 0755 a\nf 0644 1 ab/x\nxe\n", "h00") == MARO_BUNDLE_HOSTILE);
	/* a mode up to 07777 is a mode (what a directory keeps of it: r-x) */
	CHECK(UNPACK("maro-bundle 1\nd 7777 top\ne\n", "m7777") == 0);
	snprintf(path, sizeof path, "%s/m7777/top", base);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0555);
	CHECK(UNPACK("maro-bundle 1\nd 10000 top\ne\n", "m10000") == MARO_BUNDLE_HOSTILE &&
	    strstr(why_said, "a malformed record"));
	/* the directories it walks through are closed as it leaves them */
	fd = unit_open_fds();
	CHECK(UNPACK("maro-bundle 1\nd 0755 a\nd 0755 a/b\nd 0755 a/b/c\nd 0755 d\nd 0755 d/e\ne\n", "fds") == 0);
	CHECK(fd > 0 && unit_open_fds() == fd);
	/* hostile or broken */
	CHECK(UNPACK("not a bundle\ne\n", "h1") == MARO_BUNDLE_HOSTILE &&
	    !strcmp(why_said, "not a bundle (no 'maro-bundle 1' line first)"));
	CHECK(UNPACK("maro-bundle 1\nf 0644 2 a\nx\n", "h2") == MARO_BUNDLE_HOSTILE);	/* no end */
	CHECK(UNPACK("maro-bundle 1\nf 0644 9 a\nx\ne\n", "h3") == MARO_BUNDLE_HOSTILE);	/* cut short */
	CHECK(UNPACK("maro-bundle 1\ne\nmore", "h4") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 0644 1 a\nxf 0644 1 a\nye\n", "h5") == MARO_BUNDLE_HOSTILE);	/* twice */
	CHECK(UNPACK("maro-bundle 1\nd 0755 a\nd 0755 a\ne\n", "h6") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 0644 1 a/../../b\nxe\n", "h7") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 0644 1 ./a\nxe\n", "h8") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 0644 1 a//b\nxe\n", "h9") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 0644 1 no/parent\nxe\n", "h10") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nl 4 l\n../ae\n", "h11") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nl 6 l\na/../be\n", "h12") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 99999 1 a\nxe\n", "h13") == MARO_BUNDLE_HOSTILE);	/* mode */
	CHECK(UNPACK("maro-bundle 1\nf 0644 x a\nxe\n", "h14") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nc 0644 a\ne\n", "h15") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nf 0644 70000 a\n", "h16") == MARO_BUNDLE_HOSTILE);	/* file max */
	CHECK(UNPACK("maro-bundle 1\nl 0 l\ne\n", "h17") == MARO_BUNDLE_HOSTILE);
	CHECK(UNPACK("maro-bundle 1\nl 2 l\na\0e\n", "h18") == MARO_BUNDLE_HOSTILE);	/* a NUL */
	/* a directory that is there already is no place to unpack */
	CHECK(UNPACK("maro-bundle 1\ne\n", "ok") == MARO_BUNDLE_IO);

	/* the server: a packed file, its name and size, its chunks, and refusals */
	snprintf(path, sizeof path, "%s/packed", base);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "maro-bundle 1\ne\n", 16) == 16);
	close(fd);
	crypto_hash_sha256(sum, (const unsigned char *)"maro-bundle 1\ne\n", 16);
	sodium_bin2hex(hex, sizeof hex, sum, sizeof sum);
	CHECK(maro_bundle_srv_open(&srv, path, &err) == 0 && srv.size == 16 && !strcmp(srv.hash, hex));
	CHECK(maro_bundle_srv_answer(&srv, (const uint8_t *)"\x60", 1, &out, why, sizeof why) == 0 &&
	    out.len == 1 + 1 + 64 + 3 && !memcmp(out.p + 2, srv.hash, 64) && !memcmp(out.p + 66, " 16", 3));
	snprintf(why, sizeof why, "%c%c%s 8", 0x78, 66, srv.hash);
	CHECK(maro_bundle_srv_answer(&srv, (const uint8_t *)why, 68, &out, why, sizeof why) == 0 &&
	    out.len == 9 && out.p[0] == 0x48 && !memcmp(out.p + 1, "dle 1\ne\n", 8));
	snprintf(why, sizeof why, "%c%c%s 99", 0x78, 67, srv.hash);
	CHECK(maro_bundle_srv_answer(&srv, (const uint8_t *)why, 69, &out, why, sizeof why) < 0);
	CHECK(maro_bundle_srv_answer(&srv, (const uint8_t *)"\x01", 1, &out, why, sizeof why) < 0);
	maro_bundle_srv_close(&srv);
	maro_buf_free(&out);
	test_cache(base);
	snprintf(path, sizeof path, "chmod -R u+w '%s' && rm -rf '%s'", base, base);
	CHECK(system(path) == 0);
	test_manifest();
}

#define Z64 "0000000000000000000000000000000000000000000000000000000000000000"
#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* The manifest's parser (lib/manifest.h): what it takes, what it refuses, the round trip. */
static void
test_manifest(void)
{
	struct maro_manifest_entry e, back;
	char hash[MARO_MANIFEST_HASH_LEN + 1], line[512];
	int k;

	CHECK(maro_manifest_head("maro-manifest 2 " A64, hash) == 0 && !strcmp(hash, A64));
	CHECK(maro_manifest_head("maro-manifest 1 " A64, hash) < 0);	/* version 1: fetched again */
	CHECK(maro_manifest_head("maro-manifest 2 " A64 " ", hash) < 0);
	CHECK(maro_manifest_head("maro-manifest 2 " Z64 "0", hash) < 0);
	CHECK(maro_manifest_parse("f 444 6 1234 1700000000123456789 -7 lib/a word", &e) == 0 &&
	    e.type == 'f' && e.mode == 0444 && e.size == 6 && e.ino == 1234 && e.mtime == 1700000000123456789 &&
	    e.ctime == -7 && !strcmp(e.path, "lib/a word"));
	k = maro_manifest_format(&e, line, sizeof line);
	CHECK(k > 0 && line[k - 1] == '\n');
	line[k - 1] = '\0';
	CHECK(maro_manifest_parse(line, &back) == 0 && back.mtime == e.mtime && back.ctime == e.ctime &&
	    !strcmp(back.path, e.path));
	CHECK(maro_manifest_parse("e 3", &e) == 0 && e.type == 'e' && e.size == 3);
	CHECK(maro_manifest_parse("e 3 ", &e) < 0);
	CHECK(maro_manifest_parse("e -3", &e) < 0);
	CHECK(maro_manifest_parse("d 555 0 0 0 0 d", &e) == 0 && e.mode == 0555);
	CHECK(maro_manifest_parse("d 10000 0 0 0 0 d", &e) < 0);		/* mode over 07777 */
	CHECK(maro_manifest_parse("d 558 0 0 0 0 d", &e) < 0);		/* not octal */
	CHECK(maro_manifest_parse("d 555 0 0 0 0 ", &e) < 0);		/* no path */
	CHECK(maro_manifest_parse("d 555 0 0 0 0", &e) < 0);
	CHECK(maro_manifest_parse("d 555  0 0 0 0 d", &e) < 0);		/* two spaces */
	CHECK(maro_manifest_parse("d 555 -1 0 0 0 d", &e) < 0);
	CHECK(maro_manifest_parse("f 444 18446744073709551616 0 0 0 f", &e) < 0);
	CHECK(maro_manifest_parse("f 444 18446744073709551615 0 0 0 f", &e) == 0);
	CHECK(maro_manifest_parse("f 444 0 0 9223372036854775808 0 f", &e) < 0);
	CHECK(maro_manifest_parse("f 444 0 0 -9223372036854775808 0 f", &e) == 0 && e.mtime == INT64_MIN);
	CHECK(maro_manifest_parse("f 444 0 0 0 x f", &e) < 0);		/* not a number */
	CHECK(maro_manifest_parse("p 444 0 0 0 0 f", &e) < 0);
	CHECK(maro_manifest_parse("", &e) < 0);
	e.type = 'f';
	e.path = "a\nb";
	CHECK(maro_manifest_format(&e, line, sizeof line) < 0);
}
