/* CURVE key files, as the Swift CLI and earshotd write them: one Z85 key on a line, '#' comments. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

bool es_is_key(const char *text, size_t length) {
    if (length != 40) return false;
    char copy[EARSHOT_KEY_TEXT];
    uint8_t raw[32];
    memcpy(copy, text, 40);
    copy[40] = '\0';
    return zmq_z85_decode(raw, copy) != NULL;
}

/* One line of a key file, read a byte at a time (any length: comments may be long): whether it
 * ended (else EOF), and its text without the surrounding blanks in `text` — the first
 * `capacity - 1` bytes of it; *length is the whole length. */
static bool read_line(FILE *file, char *text, size_t capacity, size_t *length) {
    size_t n = 0, end = 0; /* bytes after the leading blanks; up to the last one that is not blank */
    int c;
    bool any = false;
    while ((c = fgetc(file)) != EOF && c != '\n') {
        any = true;
        if (n == 0 && isspace(c)) continue;
        if (n < capacity - 1) text[n] = (char)c;
        n++;
        if (!isspace(c)) end = n;
    }
    *length = end;
    text[end < capacity - 1 ? end : capacity - 1] = '\0';
    return c == '\n' || any;
}

int earshot_read_key_file(const char *path, char key[EARSHOT_KEY_TEXT], earshot_status *status) {
    if (path == NULL || key == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no key file given");
    FILE *file = fopen(path, "r");
    if (file == NULL) return es_fail(status, EARSHOT_NOT_FOUND, "%s: cannot open: %s", path, strerror(errno));
    char line[48]; /* holds a key (40) and shows that a longer line is not one */
    size_t length;
    int keys = 0, bad = 0;
    while (read_line(file, line, sizeof line, &length)) {
        if (length == 0) continue;
        /* '#' is a Z85 digit too: a line that is a key is a key, otherwise it is a comment. */
        if (es_is_key(line, length)) {
            if (keys++ == 0) {
                memcpy(key, line, 40);
                key[40] = '\0';
            }
        } else if (line[0] != '#') {
            bad++;
        }
    }
    explicit_bzero(line, sizeof line); /* it held the secret key */
    int read_error = ferror(file);
    fclose(file);
    if (read_error) return es_fail(status, EARSHOT_NOT_FOUND, "%s: read error", path);
    if (keys != 1 || bad != 0) {
        if (keys > 0) explicit_bzero(key, EARSHOT_KEY_TEXT);
        return es_fail(status, EARSHOT_INVALID_ARGUMENT,
                       "%s: a key file holds one 40-character Z85 key and '#' comments (found %d key(s), %d other line(s))",
                       path, keys, bad);
    }
    return es_ok(status);
}

int earshot_public_key(const char *secret_key, char public_key[EARSHOT_KEY_TEXT], earshot_status *status) {
    if (public_key == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the public key");
    if (secret_key == NULL || !es_is_key(secret_key, strlen(secret_key)))
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "not a 40-character Z85 secret key");
    if (zmq_curve_public(public_key, secret_key) != 0)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "cannot derive the public key: %s", zmq_strerror(zmq_errno()));
    return es_ok(status);
}
