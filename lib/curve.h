/*
 * curve: the group key that encrypts and authenticates every connection
 * (ZeroMQ CURVE), and the authentication handler that admits only holders
 * of it.
 *
 * A group key file is text, mode 0600, made by maro-keygen(1):
 *   # comment lines
 *   public = <40 Z85 characters>
 *   secret = <40 Z85 characters>
 * Every member of the group holds the same key pair: inboxes are CURVE
 * servers with its secret key, senders are CURVE clients that expect the
 * group's public key from the server and present the group's key pair, and
 * the handler (ZAP, RFC 27) rejects any client whose key is not the group's.
 * A process without the file can neither deliver a message, nor receive
 * one by registering a name (it cannot complete the server handshake), nor
 * read the traffic.
 */
#ifndef MARO_CURVE_H
#define MARO_CURVE_H

#include <stddef.h>
#include <stdint.h>

#define MARO_Z85_KEY 40

struct maro_curve_key {
	char public_z85[MARO_Z85_KEY + 1];
	char secret_z85[MARO_Z85_KEY + 1];
};

/*
 * Makes a fresh key pair and writes it to path, created with mode 0600; an
 * existing file is never overwritten (-1/EEXIST).  -1 with errno and a
 * message in errbuf on failure.
 */
int maro_curve_keygen(const char *path, char *errbuf, size_t errlen);

/*
 * Reads a key file.  Refuses (-1/EACCES) a file that its group or others
 * may read or write, and (-1/EINVAL) one that is not a regular file, lacks
 * a key, or whose public key does not belong to its secret key.  The
 * message in errbuf names the file, never the key.
 */
int maro_curve_load(const char *path, struct maro_curve_key *k, char *errbuf, size_t errlen);

/* Wipes the secret from memory. */
void maro_curve_wipe(struct maro_curve_key *k);

/*
 * A key for another use of the group key, never the key itself: libsodium's
 * crypto_kdf_derive_from_key(out, outlen, id, ctx, the 32 bytes of the
 * secret key), ctx 8 characters (maro(7) names each use: the registry's
 * entry MAC is id 1, "maro-reg", 32 bytes).  outlen 16 to 64.  0, or -1
 * (EINVAL: no valid secret key in k).
 */
int maro_curve_derive(const struct maro_curve_key *k, uint64_t id, const char ctx[8],
    unsigned char *out, size_t outlen);

/*
 * The authentication handler of a ZeroMQ context: a thread that answers
 * the context's ZAP requests, admitting CURVE clients that present the
 * group's public key.  It ends when the context is terminated; call
 * maro_zap_join() after zmq_ctx_term().
 */
struct maro_zap;
struct maro_zap *maro_zap_start(void *zmq_ctx, const char *public_z85);
void maro_zap_join(struct maro_zap *z);
/*
 * Watches a CURVE server socket of the same context for handshakes that
 * fail before authentication (a peer without CURVE, or expecting another
 * key): they count as rejected clients too.  At most 16 per handler.
 */
int maro_zap_watch(struct maro_zap *z, void *zmq_ctx, void *server);
/*
 * How many clients were rejected so far; the address of the last one in
 * addr (may be NULL).
 */
unsigned long maro_zap_rejected(struct maro_zap *z, char *addr, size_t addrlen);

#endif
