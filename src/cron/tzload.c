/* tzload.c -- the one file of src/cron that does I/O: cron_tz_load() reads a
 * zone's TZif file from $TZDIR (when set and not empty) or
 * /usr/share/zoneinfo and hands the bytes to cron_tz_from_tzif().
 *
 * Zone names are IANA names ("Europe/Berlin"): relative, made of components
 * of letters, digits, '_', '+', '-' and '.', none empty or starting with '.',
 * so a name can never leave the zone directory ("../../etc/passwd",
 * "/etc/passwd" and "Europe//Berlin" are refused).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cron_int.h"

#define TZ_DEFAULT_DIR "/usr/share/zoneinfo"
#define TZ_NAME_MAX 255
#define TZIF_MAX_BYTES (1024 * 1024) /* real files are < 4 KiB */

static bool name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '+' || c == '-' || c == '.';
}

static bool name_ok(const char *name)
{
    size_t len = strlen(name);
    const char *p = name;

    if (len == 0 || len > TZ_NAME_MAX)
        return false;
    for (;;) { /* one component per turn */
        const char *s = p;
        if (*p == '.')
            return false; /* ".", "..", hidden files */
        while (*p != '\0' && *p != '/') {
            if (!name_char_ok(*p))
                return false;
            p++;
        }
        if (p == s)
            return false; /* leading '/', "//" or trailing '/' */
        if (*p == '\0')
            return true;
        p++;
    }
}

/* Copies name into buf for a message, '?' for anything unprintable. */
static const char *printable(const char *name, char *buf, size_t len)
{
    size_t i;
    for (i = 0; name[i] != '\0' && i + 1 < len; i++) {
        unsigned char c = (unsigned char)name[i];
        buf[i] = (c < 0x20 || c >= 0x7f || c == '"') ? '?' : (char)c;
    }
    buf[i] = '\0';
    return buf;
}

int cron_tz_load(const char *name, struct cron_tz **out, char *err, size_t errlen)
{
    char path[4096], shown[72];
    const char *dir = getenv("TZDIR");
    unsigned char *buf = NULL;
    struct stat st;
    size_t have = 0;
    int fd = -1, rc = -1;

    *out = NULL;
    if (name == NULL || !name_ok(name)) {
        snprintf(err, errlen, "invalid time zone name \"%s\" (use an IANA name like Europe/Berlin)",
                 name != NULL ? printable(name, shown, sizeof shown) : "");
        goto out;
    }
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
        rc = cron__tz_fixed(name, 0, out, err, errlen);
        goto out;
    }
    if (dir == NULL || *dir == '\0')
        dir = TZ_DEFAULT_DIR;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        snprintf(err, errlen, "time zone \"%s\": path too long", printable(name, shown, sizeof shown));
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            snprintf(err, errlen, "unknown time zone \"%s\"", printable(name, shown, sizeof shown));
        else
            snprintf(err, errlen, "time zone \"%s\": cannot open %s: %s",
                     printable(name, shown, sizeof shown), path, strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TZIF_MAX_BYTES) {
        snprintf(err, errlen, "unknown time zone \"%s\" (%s is not a TZif file)",
                 printable(name, shown, sizeof shown), path);
        goto out_close;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out_close;
    }
    while (have < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "time zone \"%s\": cannot read %s: %s",
                     printable(name, shown, sizeof shown), path, strerror(errno));
            goto out_free_buf;
        }
        if (n == 0)
            break; /* the file shrank: parse what is there */
        have += (size_t)n;
    }
    if (have < 4 || memcmp(buf, "TZif", 4) != 0) {
        snprintf(err, errlen, "unknown time zone \"%s\" (%s is not a TZif file)",
                 printable(name, shown, sizeof shown), path);
        goto out_free_buf;
    }
    rc = cron_tz_from_tzif(name, buf, have, out, err, errlen);
out_free_buf:
    free(buf);
out_close:
    close(fd);
out:
    return rc;
}
