/*
 * libearshot-client: a C11 client of earshotd (the Earshot recognition daemon) over ZeroMQ and
 * protobuf-c. The wire protocol is docs/PROTOCOL.md; messages are the generated protobuf-c
 * types of proto/earshot/v1 (earshot/v1/NAME.pb-c.h, all included here).
 *
 * Conventions of every function below:
 *
 * - Errors are gRPC status codes (earshot_code). A function that can fail returns the code
 *   (EARSHOT_OK = 0 on success) and, when `status` is not NULL, fills it with the code and a
 *   one-line message saying what went wrong ("no answer from tcp://… within 2 s", or the
 *   daemon's own status message). Failures detected on this side use the codes of the protocol:
 *   DEADLINE_EXCEEDED (no answer or no connection in time: also what a CURVE refusal looks
 *   like), UNAVAILABLE (the connection a call was sent on dropped — the daemon then cancels the
 *   call —, a stream's daemon went silent, or the ZeroMQ context was shut down), INTERNAL (a
 *   reply that does not decode), INVALID_ARGUMENT (bad arguments, NULL handles, a request over
 *   the daemon's 4 MiB frame limit), RESOURCE_EXHAUSTED (out of memory, or a stream left unread
 *   while another call waited), DATA_LOSS (a stream item missing). A status code from the daemon
 *   outside 0–16 is reported as UNKNOWN with "status code N: " before its message.
 * - Ownership: messages returned through `ProtobufCMessage **` out-parameters are unpacked by
 *   protobuf-c and owned by the caller, who frees them with earshot_message_free(). Pointers
 *   returned as `const` (follower updates, snapshots) stay owned by the library and are valid
 *   until the next earshot_follower_poll() on the same follower (or its close).
 * - Threads: there is no global state. A handle (earshot_client, earshot_subscriber,
 *   earshot_follower) may be used from several threads: each function takes the handle's mutex
 *   for its whole duration, including its wait, which is bounded by its timeout or wait_ms. So
 *   calls on one handle run one at a time; a thread blocked in earshot_stream_next(…, 5000)
 *   delays another thread's call on the same client by up to 5 s. Threads that must not wait
 *   for each other use a handle each. A stream belongs to its client and shares its mutex. A
 *   follower has one consumer thread: the pointers it returns are freed by its next poll, so
 *   only the polling thread may use them (or copy what it keeps).
 * - Memory: a handle allocates itself and its buffers once and reuses them; calls allocate
 *   only what protobuf-c needs to unpack a message (and libzmq for its frames; a client's first
 *   call also starts its connection monitor, an inproc socket pair).
 */
#ifndef EARSHOT_CLIENT_H
#define EARSHOT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "earshot/v1/catalogs.pb-c.h"
#include "earshot/v1/cues.pb-c.h"
#include "earshot/v1/envelope.pb-c.h"
#include "earshot/v1/events.pb-c.h"
#include "earshot/v1/health.pb-c.h"
#include "earshot/v1/library.pb-c.h"
#include "earshot/v1/recognizer.pb-c.h"
#include "earshot/v1/session.pb-c.h"
#include "earshot/v1/types.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EARSHOT_CLIENT_VERSION "0.1.0"
/* The protocol signature, the first frame of every RPC message. */
#define EARSHOT_SIGNATURE "EARSHOT/1"
#define EARSHOT_DEFAULT_ENDPOINT "tcp://127.0.0.1:7400"
#define EARSHOT_DEFAULT_EVENTS "tcp://127.0.0.1:7401"
/* Calls (unary and streams) one client may have open at once: the daemon's per-connection limit. */
#define EARSHOT_MAX_CALLS 16
/* Replies a stream may hold unread while other calls on its client are waited for: its items
 * (one less) and its END. A stream being read takes its replies straight from libzmq's queue
 * (see earshot_stream_next for a full queue). */
#define EARSHOT_STREAM_QUEUE 256
#define EARSHOT_MESSAGE_MAX 256
#define EARSHOT_KEY_TEXT 41 /* 40 Z85 characters and a NUL */

/* Event topics (docs/PROTOCOL.md §2). Each ends with '/': subscriptions are prefixes. */
#define EARSHOT_TOPIC_SESSION "earshot.v1/session/"
#define EARSHOT_TOPIC_MATCH "earshot.v1/match/"
#define EARSHOT_TOPIC_CATALOG "earshot.v1/catalog/"
#define EARSHOT_TOPIC_CUE "earshot.v1/cue/"
#define EARSHOT_TOPIC_LIBRARY "earshot.v1/library/"
#define EARSHOT_TOPIC_HEALTH "earshot.v1/health/"
#define EARSHOT_TOPIC_HEARTBEAT "earshot.v1/hb/"

/* ---- Status ----------------------------------------------------------------------------- */

/* gRPC status codes, as the daemon uses them (docs/PROTOCOL.md, "Status codes"). */
typedef enum earshot_code {
    EARSHOT_OK = 0,
    EARSHOT_CANCELLED = 1,
    EARSHOT_UNKNOWN = 2,
    EARSHOT_INVALID_ARGUMENT = 3,
    EARSHOT_DEADLINE_EXCEEDED = 4,
    EARSHOT_NOT_FOUND = 5,
    EARSHOT_ALREADY_EXISTS = 6,
    EARSHOT_PERMISSION_DENIED = 7,
    EARSHOT_RESOURCE_EXHAUSTED = 8,
    EARSHOT_FAILED_PRECONDITION = 9,
    EARSHOT_ABORTED = 10,
    EARSHOT_OUT_OF_RANGE = 11,
    EARSHOT_UNIMPLEMENTED = 12,
    EARSHOT_INTERNAL = 13,
    EARSHOT_UNAVAILABLE = 14,
    EARSHOT_DATA_LOSS = 15,
    EARSHOT_UNAUTHENTICATED = 16,
} earshot_code;

/* A call's outcome: its code and why (the daemon's message, or this library's). */
typedef struct earshot_status {
    int code;
    char message[EARSHOT_MESSAGE_MAX];
} earshot_status;

/* "OK", "NOT_FOUND"…, or "UNKNOWN_CODE" outside 0–16. A static string; thread-safe. */
const char *earshot_code_name(int code);

/* ---- Options and keys ------------------------------------------------------------------- */

/* How to reach the daemon. Fill with earshot_options_init(), then set what differs. The
 * strings are copied by the open functions; they need not outlive the call. */
typedef struct earshot_options {
    /* The RPC endpoint: "tcp://host:7400", or "host:port" (meaning tcp). NULL: the default. */
    const char *endpoint;
    /* The events endpoint (subscriber, follower). NULL: the default. */
    const char *events_endpoint;
    /* CURVE: the daemon's public key, as 40-character Z85 text or a key file (its state
     * folder's server.public), and this client's secret key file (NAME.key from
     * `earshot keygen`). Both NULL: plain TCP (a daemon with security.mode = "none"). */
    const char *server_key;
    const char *client_key;
    /* Deadline of calls that pass timeout_ms 0, in ms. 0: 10 000. */
    int timeout_ms;
    /* A libzmq context to use (not owned; must outlive the handle). NULL: the handle makes and
     * owns one (one I/O thread). */
    void *zmq_context;
} earshot_options;

/* Sets every field to its default (NULL / 0). */
void earshot_options_init(earshot_options *options);

/* Reads the one key of a key file (`server.public`, `NAME.key`, `NAME.pub`: one 40-character
 * Z85 key on a line, other lines comments starting with '#'; a line that is a valid key is a key
 * even when it starts with '#'). Writes it with a NUL into `key` (EARSHOT_KEY_TEXT bytes).
 * Errors: NOT_FOUND (cannot open), INVALID_ARGUMENT (no key, or more than one). */
int earshot_read_key_file(const char *path, char key[EARSHOT_KEY_TEXT], earshot_status *status);

/* The public key of a Z85 secret key, into `public_key` (EARSHOT_KEY_TEXT bytes).
 * Errors: INVALID_ARGUMENT (not a Z85 key). */
int earshot_public_key(const char *secret_key, char public_key[EARSHOT_KEY_TEXT], earshot_status *status);

/* ---- Methods ---------------------------------------------------------------------------- */

/* An RPC method: its path, its message types and whether it streams. The library defines one
 * constant per method of earshot.v1 (below); a test checks them against the generated service
 * descriptors. */
typedef struct earshot_method {
    const char *path; /* "/earshot.v1.Recognizer/Match" */
    const ProtobufCMessageDescriptor *request;
    const ProtobufCMessageDescriptor *response;
    bool server_streaming;
} earshot_method;

extern const earshot_method earshot_recognizer_prepare, earshot_recognizer_match,
    earshot_recognizer_stream_matches, earshot_recognizer_match_signature, earshot_recognizer_cancel;
extern const earshot_method earshot_session_get_snapshot;
extern const earshot_method earshot_catalogs_list, earshot_catalogs_describe, earshot_catalogs_enable,
    earshot_catalogs_disable, earshot_catalogs_remove, earshot_catalogs_begin_upload,
    earshot_catalogs_upload_chunk, earshot_catalogs_get_upload, earshot_catalogs_commit_upload,
    earshot_catalogs_abort_upload;
extern const earshot_method earshot_cues_get_schedule, earshot_cues_get_current, earshot_cues_set_cues,
    earshot_cues_clear_cues, earshot_cues_stream_cues;
extern const earshot_method earshot_library_add, earshot_library_items, earshot_library_remove,
    earshot_library_watch_library, earshot_library_list_owners, earshot_library_delete_owner,
    earshot_library_backup;
extern const earshot_method earshot_health_check, earshot_health_watch, earshot_health_get_stats;

/* Every method, in the order above, and how many. */
extern const earshot_method *const earshot_methods[];
extern const size_t earshot_method_count;

/* The method of a path ("/earshot.v1.Health/Check"), or NULL. */
const earshot_method *earshot_method_find(const char *path);

/* ---- Client (RPC) ----------------------------------------------------------------------- */

typedef struct earshot_client earshot_client;

/* Opens a client: a DEALER socket connected to options->endpoint (with CURVE when keys are
 * given), ZMQ_IMMEDIATE, ZMQ_LINGER 0 and ZMTP heartbeats. Connecting is asynchronous: a daemon
 * that is down or refuses the keys shows later, as calls that end DEADLINE_EXCEEDED.
 * On success *client is a new handle, to be closed with earshot_client_close().
 * Errors: INVALID_ARGUMENT (bad endpoint, one key without the other, a bad key or key file),
 * NOT_FOUND (a key file missing), RESOURCE_EXHAUSTED (out of memory), INTERNAL (libzmq). */
int earshot_client_open(const earshot_options *options, earshot_client **client, earshot_status *status);

/* Cancels the client's open calls (best effort, without waiting), closes the socket and frees
 * the handle, its streams and their unread replies. NULL is ignored. Not to be called while
 * another thread uses the handle. */
void earshot_client_close(earshot_client *client);

/* Calls a unary method: sends `request` (a message of method->request's type) and waits for the
 * END reply, for at most timeout_ms (0: the client's default). The request carries the same
 * relative deadline, so the daemon stops working on it too. On OK, *response is the result (a
 * method->response message, owned by the caller: earshot_message_free()). On any other code,
 * *response is NULL and status says why: the daemon's code and message, or DEADLINE_EXCEEDED
 * "no answer from … within … s" (the call is then cancelled on the daemon), or
 * DEADLINE_EXCEEDED "no connection to … " (daemon down, or CURVE refused this client; the
 * message says so when libzmq reported a failed handshake), or UNAVAILABLE "the connection to …
 * was lost" (it dropped while the call waited: the daemon cancelled it), or INVALID_ARGUMENT for
 * a request over the daemon's frame limit (4 MiB), refused without sending it. */
int earshot_call(earshot_client *client, const earshot_method *method, const ProtobufCMessage *request,
                 ProtobufCMessage **response, int timeout_ms, earshot_status *status);

/* As earshot_call with the request already serialized and the reply's payload left undecoded:
 * the daemon's bytes are copied into `buffer` (at most `capacity`; *length set to their full
 * length, so a length > capacity means truncated). For paths this library does not know
 * (UNIMPLEMENTED tests, newer daemons). */
int earshot_call_raw(earshot_client *client, const char *path, const uint8_t *request, size_t request_length,
                     uint8_t *buffer, size_t capacity, size_t *length, int timeout_ms, earshot_status *status);

/* Sends a PING and waits for its PONG (at most timeout_ms; 0: the default); *rtt_ms (may be
 * NULL) is the round trip. A PING is answered even while the daemon shuts down. It is not a
 * call: it goes even with EARSHOT_MAX_CALLS calls open. */
int earshot_ping(earshot_client *client, int timeout_ms, double *rtt_ms, earshot_status *status);

/* The client's RPC endpoint as connected ("tcp://…"). Valid while the handle is open. */
const char *earshot_client_endpoint(const earshot_client *client);

/* Counters: replies dropped because they were malformed, and replies to calls no longer
 * waited for (after a local deadline or a cancel). Thread-safe. */
void earshot_client_counters(earshot_client *client, uint64_t *dropped, uint64_t *stale);

/* Frees a message returned by this library (protobuf_c_message_free_unpacked). NULL is ignored. */
void earshot_message_free(ProtobufCMessage *message);

/* Typed helpers for the calls a small client makes most. Each is earshot_call() with the
 * method and types filled in; the results are owned by the caller (earshot_message_free). */
int earshot_prepare(earshot_client *client, int timeout_ms, earshot_status *status);
int earshot_match(earshot_client *client, bool add_to_library, Earshot__V1__MatchResult **result, int timeout_ms,
                  earshot_status *status);
int earshot_get_snapshot(earshot_client *client, Earshot__V1__SessionSnapshot **snapshot, int timeout_ms,
                         earshot_status *status);
/* Health/Check of `service` ("" or NULL: the whole daemon); *serving set to its ServingStatus. */
int earshot_check_health(earshot_client *client, const char *service, Earshot__V1__ServingStatus *serving,
                         int timeout_ms, earshot_status *status);

/* ---- Server streams --------------------------------------------------------------------- */

typedef struct earshot_stream earshot_stream;

/* Starts a server-streaming call (method->server_streaming). timeout_ms is the whole stream's
 * deadline; 0 or less: the longest the daemon allows, 24 h (docs/PROTOCOL.md caps timeout_ms
 * there), after which the daemon ends it DEADLINE_EXCEEDED — there is no deadline here. The
 * stream lives in the client (at most EARSHOT_MAX_CALLS calls at once): close it with
 * earshot_stream_close(). While earshot_stream_next() waits, a client that heard nothing for
 * 5 s PINGs the daemon, and the stream ends UNAVAILABLE when that PING is unanswered for 10 s
 * (judged after reading what has arrived, so a caller that reads rarely does not lose its
 * stream). When the connection it was sent on drops, the daemon cancels it and it ends
 * UNAVAILABLE here too. Errors: as earshot_call's sending part; INVALID_ARGUMENT for a unary
 * method; RESOURCE_EXHAUSTED when EARSHOT_MAX_CALLS calls are open. */
int earshot_stream_open(earshot_client *client, const earshot_method *method, const ProtobufCMessage *request,
                        int timeout_ms, earshot_stream **stream, earshot_status *status);

/* What earshot_stream_next() and earshot_follower_poll() found. */
typedef enum earshot_next {
    EARSHOT_NEXT_ITEM = 0, /* an item (stream) or an update (follower) was delivered */
    EARSHOT_NEXT_END = 1,  /* the stream is over: status has its final code (OK included) */
    EARSHOT_NEXT_WAIT = 2, /* nothing new within wait_ms (see earshot_stream_next): call again */
} earshot_next;

/* Waits up to wait_ms (< 0: until something happens) for the stream's next item; replies that
 * have arrived are read first, even with wait_ms 0. ITEM: *item is a method->response message
 * owned by the caller (earshot_message_free). WAIT: nothing for this stream in time — or sooner,
 * when the next reply belongs to another stream of the client whose queue is full and which was
 * read in the last 5 s: read that one (a stream not read for 5 s is ended RESOURCE_EXHAUSTED
 * instead, so no reader waits for a stream nobody reads). END: the stream ended, and status (if
 * given) holds the final code and message — the daemon's (OK, CANCELLED after
 * earshot_stream_cancel(), …), or this side's: DEADLINE_EXCEEDED, UNAVAILABLE (the connection
 * dropped, the daemon went silent, the context was shut down), DATA_LOSS (an item_seq gap shows
 * a lost item), INTERNAL (an item that does not decode), RESOURCE_EXHAUSTED (the stream's queue
 * filled while nobody read it). Items that arrived before such a failure are delivered before
 * its END. Every later call returns END again; a NULL stream or item: END, INVALID_ARGUMENT. */
earshot_next earshot_stream_next(earshot_stream *stream, ProtobufCMessage **item, int wait_ms, earshot_status *status);

/* Asks the daemon to end the stream (a CANCEL). Items already on their way are dropped; the
 * next earshot_stream_next() returns END with the daemon's CANCELLED (or, if its END does not
 * come within 2 s, a local CANCELLED). Sending CANCEL twice is harmless. */
int earshot_stream_cancel(earshot_stream *stream, earshot_status *status);

/* Whether the stream has ended; its final status into `status` (may be NULL) when it has. */
bool earshot_stream_done(earshot_stream *stream, earshot_status *status);

/* Items delivered so far. */
uint64_t earshot_stream_count(earshot_stream *stream);

/* Cancels the stream if it still runs (without waiting) and frees it and its unread replies.
 * The pointer is invalid afterwards. NULL is ignored. */
void earshot_stream_close(earshot_stream *stream);

/* ---- Events: subscriber ----------------------------------------------------------------- */

typedef struct earshot_subscriber earshot_subscriber;

/* Opens a SUB socket on options->events_endpoint with CURVE as configured, subscribed to
 * `topics` (n of them; topics NULL or n 0: every topic, the prefix "earshot.v1/") before it
 * connects. Its receive queue holds 100 000 events: read it at least every few seconds
 * (libzmq 4.3.4 may abort a process whose full SUB queue is then read, docs/PROTOCOL.md §4).
 * Errors: as earshot_client_open(); INVALID_ARGUMENT for more than 16 topics or an empty one. */
int earshot_subscriber_open(const earshot_options *options, const char *const *topics, size_t n,
                            earshot_subscriber **subscriber, earshot_status *status);

/* Waits up to wait_ms (< 0: for ever) for the next event. ITEM: *event is the decoded envelope
 * (owned by the caller: earshot_message_free); its topic is the frame's. WAIT: nothing came.
 * Malformed messages (not topic | EventEnvelope, or a topic that differs from the frame's) are
 * dropped and counted. END only when the subscriber cannot go on: its ZeroMQ context was shut
 * down (zmq_ctx_shutdown), or NULL arguments. */
earshot_next earshot_subscriber_next(earshot_subscriber *subscriber, Earshot__V1__EventEnvelope **event, int wait_ms);

/* Whether events of `topic` pass the subscriber's filters. */
bool earshot_subscriber_receives(const earshot_subscriber *subscriber, const char *topic);

/* Events received, and messages dropped as malformed. */
void earshot_subscriber_counters(earshot_subscriber *subscriber, uint64_t *received, uint64_t *dropped);

/* Closes the socket and frees the handle. NULL is ignored. */
void earshot_subscriber_close(earshot_subscriber *subscriber);

/* ---- Events: the late-joiner follower -------------------------------------------------- */

/* A consistent view of the daemon's events for a client that joins late (docs/PROTOCOL.md,
 * "Joining late"): it subscribes before connecting, takes a Session/GetSnapshot, drops events
 * whose seq is at or below the snapshot's topic_seq and events of another epoch, and takes a new
 * snapshot when a topic's seq jumps (a gap), when the epoch changes (the daemon restarted), when
 * a heartbeat shows a topic ahead of what arrived twice in a row, or after 3 s without a
 * heartbeat (judged after reading the events that have arrived, however rarely it is polled).
 * Snapshots are at most one every 0.5 s; a failed one is retried every second.
 *
 * What it guarantees, per topic received: events in topic_seq order, each at most once, only of
 * the snapshot's epoch and past its topic_seq; a snapshot update whenever that order was broken
 * (the events missed are not replayed). A SessionSnapshot holds the state of session/ and match/
 * (and cue/, in its `cues`), so for those the snapshot plus the events is the whole state. For
 * catalog/, library/ and any other topic it holds only their topic_seq: the follower orders and
 * dedupes their events but keeps no state of them, and after a snapshot update the application
 * must read that state itself (Catalogs/List, Library/Items or WatchLibrary). The order of at
 * most 16 topics is kept; an event of a topic past those is dropped, reported as ERROR.
 *
 * One consumer thread: the pointers it returns (updates, earshot_follower_session,
 * earshot_follower_last_match) are freed by its next earshot_follower_poll(); the other
 * functions may be called from any thread. */
typedef struct earshot_follower earshot_follower;

typedef enum earshot_update_kind {
    EARSHOT_UPDATE_SNAPSHOT = 1, /* a new snapshot: `snapshot`, and `reason` says why */
    EARSHOT_UPDATE_EVENT = 2,    /* an event to apply, in order, past the snapshot: `event` */
    EARSHOT_UPDATE_ERROR = 3,    /* a snapshot failed (`error`; the follower retries), or an event of
                                    a 17th topic was dropped (RESOURCE_EXHAUSTED) */
} earshot_update_kind;

typedef struct earshot_update {
    earshot_update_kind kind;
    /* SNAPSHOT: the new snapshot. EVENT: the event (never a heartbeat: those are consumed).
     * Owned by the follower; valid until the next earshot_follower_poll() or close. */
    const Earshot__V1__SessionSnapshot *snapshot;
    const Earshot__V1__EventEnvelope *event;
    /* SNAPSHOT: "start", "gap on earshot.v1/match/: expected seq 4, got 6", "epoch changed",
     * "no heartbeat for 3 s", "heartbeat: … is at seq …"; ERROR: the reason the snapshot was
     * wanted. */
    char reason[128];
    earshot_status error; /* ERROR: why the snapshot failed */
} earshot_update;

/* The follower's counters. */
typedef struct earshot_follower_stats {
    uint64_t snapshots;     /* snapshots taken */
    uint64_t gaps;          /* losses detected (gaps, heartbeat heads, heartbeat timeouts) */
    uint64_t epoch_changes; /* daemon restarts seen */
    uint64_t stale_dropped; /* events at or below a snapshot, of a dead epoch, or before a resync */
    uint64_t events;        /* events delivered */
} earshot_follower_stats;

/* Opens a follower: a subscriber (topics as earshot_subscriber_open; the session, match and
 * heartbeat topics are always added) and a client for snapshots (a viewer key suffices).
 * The first earshot_follower_poll() takes the first snapshot. */
int earshot_follower_open(const earshot_options *options, const char *const *topics, size_t n,
                          earshot_follower **follower, earshot_status *status);

/* Waits up to wait_ms (< 0: for ever) for the next update, taking snapshots as needed. ITEM:
 * *update is filled; its pointers are valid until the next poll. WAIT: nothing happened (also
 * while a snapshot is not yet allowed). END: the follower cannot go on (its ZeroMQ context was
 * shut down; update->error says so), or a NULL follower. One thread polls a follower. */
earshot_next earshot_follower_poll(earshot_follower *follower, earshot_update *update, int wait_ms);

/* The session as of the last update: the last snapshot, or the last session/ event's
 * SessionSnapshot when newer. NULL before the first snapshot. Valid until the next poll: call it
 * from the polling thread. */
const Earshot__V1__SessionSnapshot *earshot_follower_session(earshot_follower *follower);

/* The last match/ event of this epoch (any outcome), or NULL. Valid until the next poll: call it
 * from the polling thread. */
const Earshot__V1__MatchResult *earshot_follower_last_match(earshot_follower *follower);

/* The epoch the state belongs to (0 before the first snapshot), whether it is current (a
 * snapshot succeeded and no loss is pending), and the counters. */
uint64_t earshot_follower_epoch(earshot_follower *follower);
bool earshot_follower_synced(earshot_follower *follower);
void earshot_follower_counters(earshot_follower *follower, earshot_follower_stats *stats);

/* Asks for a new snapshot at the next poll (rate-limited). */
void earshot_follower_resync(earshot_follower *follower, const char *reason);

/* Closes the follower's sockets and frees it and everything it holds. NULL is ignored. */
void earshot_follower_close(earshot_follower *follower);

/* Where in the reference the programme is at `now_unix_ms`: the item's
 * predicted_current_match_offset, valid at `at_unix_ms`, moved on by the clock at the measured
 * speed (offset + (now − at) / 1000 × (1 + time_skew)); at_unix_ms 0 leaves it as sent. */
double earshot_predict_offset(const Earshot__V1__MatchedMediaItem *item, int64_t at_unix_ms, int64_t now_unix_ms);

/* ---- JSON ------------------------------------------------------------------------------- */

/* Writes `message` as protobuf's JSON mapping on one line (lowerCamelCase names, default values
 * left out, enums by name, 64-bit integers as numbers, bytes in base64), as
 * `earshot remote match --json` prints a MatchResult; map entries in wire order. Returns 0, or
 * -1 when writing failed (errno set by stdio). */
int earshot_json_write(FILE *out, const ProtobufCMessage *message);

#ifdef __cplusplus
}
#endif

#endif
