/*
 * What Debian's libzmq.a refers to and maro never uses, for the tools
 * linked with it (GNUmakefile, LINK=static): OpenPGM (pgm://, epgm://),
 * NORM (norm://) and GSSAPI.  Linked for real, they would bring their
 * own libraries (NORM's protokit, Kerberos's six) and run their start-up
 * code in every process (protokit parses addresses before main, pgm_init
 * probes the CPU); here they are a few bytes.
 *
 * Nothing of it is reached but pgm_init and pgm_shutdown, which libzmq
 * calls with every context (zmq_ctx_new, zmq_ctx_term) and which succeed.
 * maro connects and binds only tcp:// and ipc:// (maro_endpoint_valid,
 * checked again before each connect) and never sets ZMQ_GSSAPI_*: the
 * engines that would call the rest are never made.  Were one made, each
 * call fails as its library says a failure (0, NULL or false; GSSAPI's
 * GSS_S_FAILURE).
 *
 * Not part of libmaro.a: linked after libzmq.a, for its references only.
 */

/* Its presence says libzmq has no OpenPGM here (lib/transport.c, maro_ctx_open). */
extern const char maro_zmq_static;
const char maro_zmq_static = 1;

/* The prototypes are libzmq's business: these only answer its references. */
#define FAILS(name, value) \
	long name(void); \
	long name(void) { return value; }

/* OpenPGM: bool pgm_init(pgm_error_t **), bool pgm_shutdown(void) */
int pgm_init(void *error);
int pgm_shutdown(void);

int
pgm_init(void *error)
{
	return 1;
}

int
pgm_shutdown(void)
{
	return 1;
}

FAILS(pgm_bind3, 0)
FAILS(pgm_close, 0)
FAILS(pgm_connect, 0)
FAILS(pgm_error_free, 0)
FAILS(pgm_free, 0)
FAILS(pgm_freeaddrinfo, 0)
FAILS(pgm_getaddrinfo, 0)
FAILS(pgm_getsockopt, 0)
FAILS(pgm_gsi_create_from_data, 0)
FAILS(pgm_recvmsgv, 0)
FAILS(pgm_send, 0)
FAILS(pgm_setsockopt, 0)
FAILS(pgm_socket, 0)

/* NORM: handles are pointers, NULL the invalid one; the rest are bools */
extern const void *const NORM_INSTANCE_INVALID, *const NORM_SESSION_INVALID,
    *const NORM_OBJECT_INVALID;
extern const unsigned NORM_NODE_ANY;
const void *const NORM_INSTANCE_INVALID = 0, *const NORM_SESSION_INVALID = 0,
    *const NORM_OBJECT_INVALID = 0;
const unsigned NORM_NODE_ANY = 0xffffffff;

FAILS(NormCreateInstance, 0)
FAILS(NormCreateSession, 0)
FAILS(NormDestroyInstance, 0)
FAILS(NormDestroySession, 0)
FAILS(NormGetDescriptor, -1)
FAILS(NormGetNextEvent, 0)
FAILS(NormGetRandomSessionId, 0)
FAILS(NormIsUnicastAddress, 0)
FAILS(NormNodeDelete, 0)
FAILS(NormObjectGetType, 0)
FAILS(NormObjectGetUserData, 0)
FAILS(NormObjectSetUserData, 0)
FAILS(NormSetCongestionControl, 0)
FAILS(NormSetDefaultSyncPolicy, 0)
FAILS(NormSetDefaultUnicastNack, 0)
FAILS(NormSetLoopback, 0)
FAILS(NormSetMulticastInterface, 0)
FAILS(NormSetRxPortReuse, 0)
FAILS(NormSetTTL, 0)
FAILS(NormStartReceiver, 0)
FAILS(NormStartSender, 0)
FAILS(NormStopInstance, 0)
FAILS(NormStopReceiver, 0)
FAILS(NormStopSender, 0)
FAILS(NormStreamFlush, 0)
FAILS(NormStreamOpen, 0)
FAILS(NormStreamRead, 0)
FAILS(NormStreamSeekMsgStart, 0)
FAILS(NormStreamWrite, 0)

/* GSSAPI: every call returns a major status, GSS_S_FAILURE (13 << 16) here */
extern void *GSS_C_NT_HOSTBASED_SERVICE, *GSS_C_NT_USER_NAME;
void *GSS_C_NT_HOSTBASED_SERVICE, *GSS_C_NT_USER_NAME;

FAILS(gss_accept_sec_context, 13L << 16)
FAILS(gss_acquire_cred, 13L << 16)
FAILS(gss_delete_sec_context, 13L << 16)
FAILS(gss_display_name, 13L << 16)
FAILS(gss_import_name, 13L << 16)
FAILS(gss_init_sec_context, 13L << 16)
FAILS(gss_release_buffer, 13L << 16)
FAILS(gss_release_cred, 13L << 16)
FAILS(gss_release_name, 13L << 16)
FAILS(gss_unwrap, 13L << 16)
FAILS(gss_wrap, 13L << 16)
