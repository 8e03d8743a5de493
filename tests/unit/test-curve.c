#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curve.h"
#include "unit.h"

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
}

void
test_curve(void)
{
	char dir[] = "/tmp/maro-unit-curve.XXXXXX", a[128], b[128], c[128], err[512], text[512];
	struct maro_curve_key ka, kb, kc;

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(a, sizeof a, "%s/a.key", dir);
	snprintf(b, sizeof b, "%s/b.key", dir);
	snprintf(c, sizeof c, "%s/c.key", dir);

	/* keygen: a fresh pair, mode 0600, never overwritten */
	CHECK(maro_curve_keygen(a, err, sizeof err) == 0);
	CHECK(maro_curve_keygen(a, err, sizeof err) == -1 && errno == EEXIST);
	CHECK(strstr(err, "File exists") != NULL);
	CHECK(maro_curve_keygen(b, err, sizeof err) == 0);
	{
		struct stat st;

		CHECK(stat(a, &st) == 0 && (st.st_mode & 0777) == 0600);
	}
	CHECK(maro_curve_load(a, &ka, err, sizeof err) == 0);
	CHECK(maro_curve_load(b, &kb, err, sizeof err) == 0);
	CHECK(strlen(ka.public_z85) == 40 && strlen(ka.secret_z85) == 40);
	CHECK(strcmp(ka.public_z85, kb.public_z85) && strcmp(ka.secret_z85, kb.secret_z85));

	/* spaces, comments and CRLF are fine */
	snprintf(text, sizeof text, "# c\r\n\r\n  public=%s\r\nsecret   =   %s  \r\n", ka.public_z85, ka.secret_z85);
	write_file(c, text, 0600);
	CHECK(maro_curve_load(c, &kc, err, sizeof err) == 0);
	CHECK(!strcmp(kc.secret_z85, ka.secret_z85));

	/* refused: accessible by others, mismatched, incomplete, junk, not a file */
	chmod(a, 0640);
	CHECK(maro_curve_load(a, &kc, err, sizeof err) == -1 && errno == EACCES);
	CHECK(strstr(err, "chmod 600") != NULL);
	CHECK(kc.secret_z85[0] == '\0');
	chmod(a, 0602);
	CHECK(maro_curve_load(a, &kc, err, sizeof err) == -1 && errno == EACCES);
	snprintf(text, sizeof text, "public = %s\nsecret = %s\n", kb.public_z85, ka.secret_z85);
	write_file(c, text, 0600);
	CHECK(maro_curve_load(c, &kc, err, sizeof err) == -1 && errno == EINVAL);
	CHECK(strstr(err, "does not belong") != NULL && !strstr(err, ka.secret_z85));
	snprintf(text, sizeof text, "public = %s\n", ka.public_z85);
	write_file(c, text, 0600);
	CHECK(maro_curve_load(c, &kc, err, sizeof err) == -1 && strstr(err, "lacks its secret key"));
	snprintf(text, sizeof text, "public = %s\nsecret = %.39s\n", ka.public_z85, ka.secret_z85);
	write_file(c, text, 0600);
	CHECK(maro_curve_load(c, &kc, err, sizeof err) == -1 && strstr(err, "not a maro key file"));
	write_file(c, "public = ....................................!!!!\nsecret = x\n", 0600);
	CHECK(maro_curve_load(c, &kc, err, sizeof err) == -1 && errno == EINVAL);
	CHECK(maro_curve_load(dir, &kc, err, sizeof err) == -1 && strstr(err, "not a regular file"));
	CHECK(maro_curve_load("/nonexistent/k", &kc, err, sizeof err) == -1 && errno == ENOENT);

	maro_curve_wipe(&ka);
	CHECK(ka.secret_z85[0] == '\0' && ka.public_z85[0] != '\0');
	unlink(a);
	unlink(b);
	unlink(c);
	rmdir(dir);
}
