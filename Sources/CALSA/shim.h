#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

/* alsa-lib reports details ("Unknown PCM foo", "Cannot get card index for 3") through an error
 * handler that by default prints to stderr, from whichever thread made the call - including the
 * capture thread, which must not log. Swift cannot define C variadic functions, so this header
 * installs a handler that keeps the last message of the calling thread in a fixed thread-local
 * buffer instead (no allocation, no lock); the Swift wrapper puts it into its error messages. */

enum { earshot_alsa_message_size = 256 };

/* The calling thread's last message ("" if none), earshot_alsa_message_size bytes. A static
 * inside a function, because Swift emits only the header functions it calls itself (and what
 * those reference), never header-level variables; Swift must call this one directly. */
static inline char *earshot_alsa_last_message(void) {
    static _Thread_local char message[earshot_alsa_message_size];
    return message;
}

static void earshot_alsa_error_handler(const char *file, int line, const char *function, int err,
                                       const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err;
    va_list args;
    va_start(args, fmt);
    vsnprintf(earshot_alsa_last_message(), earshot_alsa_message_size, fmt, args);
    va_end(args);
}

/* Routes alsa-lib's messages into the thread-local buffer. Safe to call more than once. */
static inline void earshot_alsa_capture_messages(void) {
    snd_lib_error_set_handler(earshot_alsa_error_handler);
}

/* A glibc extension the capture thread needs, which glibc declares only under _GNU_SOURCE and
 * Swift's Glibc module therefore leaves out: waiting on a semaphore against the monotonic clock
 * (glibc 2.30). */
#include <semaphore.h>
#include <time.h>
extern int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime);
