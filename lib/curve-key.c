/*
 * curve-key: the group key file (load, make, derive).  A file apart from
 * curve.c's ZAP handler, which drives sockets: the registry derives its
 * MAC key from the key file, and a tool that links the registry without
 * talking to any peer (maro-msg, for maro_name_valid) would otherwise
 * carry the whole of libzmq with it (tests/linking.bats).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <zmq.h>

#include "buf.h"
#include "curve.h"

#define KEYFILE_MAX 4096

void
maro_curve_wipe(struct maro_curve_key *k)
{
	explicit_bzero(k->secret_z85, sizeof k->secret_z85);
}

int
maro_curve_derive(const struct maro_curve_key *k, uint64_t id, const char ctx[8], unsigned char *out,
    size_t outlen)
{
	uint8_t secret[32];
	int rc = -1;

	/* picks libsodium's fastest code; fails only without a random source, which this needs not */
	if (sodium_init() < 0)
		rc = -1;
	if (outlen >= crypto_kdf_BYTES_MIN && outlen <= crypto_kdf_BYTES_MAX &&
	    strlen(k->secret_z85) == MARO_Z85_KEY && zmq_z85_decode(secret, k->secret_z85))
		rc = crypto_kdf_derive_from_key(out, outlen, id, ctx, secret);
	explicit_bzero(secret, sizeof secret);
	if (rc < 0)
		errno = EINVAL;
	return rc < 0 ? -1 : 0;
}

int
maro_curve_keygen(const char *path, char *errbuf, size_t errlen)
{
	struct maro_curve_key k;
	char text[256];
	int fd, n, rc = -1, e;

	if (zmq_curve_keypair(k.public_z85, k.secret_z85) < 0) {
		e = errno;
		maro_errbuf_set(errbuf, errlen, "cannot make a key pair: %s (is libzmq built with CURVE?)",
		    strerror(e));
		errno = e;
		return -1;
	}
	n = snprintf(text, sizeof text,
	    "# maro group key (ZeroMQ CURVE): every member of the group needs this file.\n"
	    "# Keep it secret (mode 0600); anyone who has it can join the group.\n"
	    "public = %s\nsecret = %s\n", k.public_z85, k.secret_z85);
	maro_curve_wipe(&k);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		e = errno;
		maro_errbuf_set(errbuf, errlen, "cannot create '%s': %s", path, strerror(e));
		goto out;
	}
	if (fchmod(fd, 0600) < 0 || write(fd, text, (size_t)n) != n || fsync(fd) < 0) {
		e = errno ? errno : EIO;
		maro_errbuf_set(errbuf, errlen, "cannot write '%s': %s", path, strerror(e));
		close(fd);
		unlink(path);
		goto out;
	}
	if (close(fd) < 0) {
		e = errno;
		maro_errbuf_set(errbuf, errlen, "cannot write '%s': %s", path, strerror(e));
		unlink(path);
		goto out;
	}
	rc = 0;
	e = 0;
out:
	explicit_bzero(text, sizeof text);
	errno = e;
	return rc;
}

/* "name = value" (spaces optional): value into out when name matches. */
static int
take(const char *line, const char *name, char out[MARO_Z85_KEY + 1])
{
	size_t n = strlen(name), v;

	if (strncmp(line, name, n))
		return 0;
	line += n;
	line += strspn(line, " \t");
	if (*line++ != '=')
		return 0;
	line += strspn(line, " \t");
	v = strcspn(line, " \t\r");
	if (v != MARO_Z85_KEY || line[v + strspn(line + v, " \t\r")] != '\0')
		return -1;
	memcpy(out, line, MARO_Z85_KEY);
	out[MARO_Z85_KEY] = '\0';
	return 1;
}

int
maro_curve_load(const char *path, struct maro_curve_key *k, char *errbuf, size_t errlen)
{
	char text[KEYFILE_MAX + 1], derived[MARO_Z85_KEY + 1];
	uint8_t bin[32];
	struct stat st;
	ssize_t n;
	char *line, *save = NULL;
	int fd, rc = -1, e = EINVAL, have_pub = 0, have_sec = 0;

	memset(k, 0, sizeof *k);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		e = errno;
		maro_errbuf_set(errbuf, errlen, "cannot open key file '%s': %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		maro_errbuf_set(errbuf, errlen, "cannot read key file '%s': %s", path, strerror(e));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		maro_errbuf_set(errbuf, errlen, "key file '%s' is not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		e = EACCES;
		maro_errbuf_set(errbuf, errlen, "key file '%s' is accessible by others (mode %03o): chmod 600 it",
		    path, (unsigned)(st.st_mode & 0777));
		goto out;
	}
	n = read(fd, text, sizeof text);
	if (n < 0) {
		e = errno;
		maro_errbuf_set(errbuf, errlen, "cannot read key file '%s': %s", path, strerror(e));
		goto out;
	}
	if (n > KEYFILE_MAX) {
		maro_errbuf_set(errbuf, errlen, "key file '%s' is too long to be a key file", path);
		goto out;
	}
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int a, b;

		line += strspn(line, " \t");
		if (*line == '#' || *line == '\0' || *line == '\r')
			continue;
		a = take(line, "public", k->public_z85);
		b = a ? 0 : take(line, "secret", k->secret_z85);
		if (a < 0 || b < 0 || (!a && !b)) {
			maro_errbuf_set(errbuf, errlen, "key file '%s': not a maro key file (expected 'public = KEY' and 'secret = KEY')", path);
			goto out;
		}
		have_pub |= a;
		have_sec |= b;
	}
	if (!have_pub || !have_sec) {
		maro_errbuf_set(errbuf, errlen, "key file '%s' lacks its %s key", path, have_pub ? "secret" : "public");
		goto out;
	}
	if (!zmq_z85_decode(bin, k->public_z85) || !zmq_z85_decode(bin, k->secret_z85) ||
	    zmq_curve_public(derived, k->secret_z85) < 0 || strcmp(derived, k->public_z85)) {
		maro_errbuf_set(errbuf, errlen, "key file '%s': the public key does not belong to the secret key", path);
		goto out;
	}
	rc = 0;
	e = 0;
out:
	explicit_bzero(text, sizeof text);
	explicit_bzero(bin, sizeof bin);
	if (rc < 0)
		maro_curve_wipe(k);
	close(fd);
	errno = e;
	return rc;
}
