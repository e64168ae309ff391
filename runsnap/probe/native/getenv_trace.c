/* runsnap's native read recorder: an LD_PRELOAD library that interposes getenv() and
 * secure_getenv(), so reads made by C, C++ and Rust code (libnccl.so, libcudart.so, ...) are
 * recorded beside the Python-level ones.
 *
 * Each call is passed to the C library's own function (found with dlsym(RTLD_NEXT)) and its
 * answer returned unchanged. The first read of each name in a process is appended to
 * $RUNSNAP_TRACE_DIR/native-<pid>.log as "<0|1>\t<name>\n" (1: it was set), with one write(2)
 * per line, so a killed process loses nothing already read. Later reads of the same name only
 * increment a counter, written as "#\t<count>\t<name>\n" lines when the process exits normally.
 * Nothing is ever printed, and a failure of ours only stops the recording.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOTS 4096
#define NAME_MAX_LEN 255

typedef char *(*getenv_fn)(const char *);

static getenv_fn real_getenv;
static getenv_fn real_secure_getenv;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int busy;
static int fd = -1;
static pid_t fd_pid;
static dev_t fd_dev;
static ino_t fd_ino;
static int disabled;
static char folder[4096];
static int folder_known;
static unsigned long hashes[SLOTS];
static unsigned long counts[SLOTS];
static char names[SLOTS][NAME_MAX_LEN + 1];

static unsigned long hash(const char *s) {
    unsigned long h = 1469598103934665603UL;
    while (*s) { h ^= (unsigned char)*s++; h *= 1099511628211UL; }
    return h ? h : 1;
}

static void resolve(void) {
    if (!real_getenv) real_getenv = (getenv_fn)dlsym(RTLD_NEXT, "getenv");
    if (!real_secure_getenv) real_secure_getenv = (getenv_fn)dlsym(RTLD_NEXT, "secure_getenv");
}

static void put(const char *a, const char *b, const char *c) {
    char line[NAME_MAX_LEN + 64];
    const char *parts[3] = {a, b, c};
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(parts[k]);
        if (n + l + 1 > sizeof line) return;
        memcpy(line + n, parts[k], l);
        n += l;
    }
    line[n++] = '\n';
    struct stat st;  /* still our file: a program that dup2()s over the number stops us */
    if (fstat(fd, &st) != 0 || st.st_dev != fd_dev || st.st_ino != fd_ino) {
        disabled = 1;
        return;
    }
    if (write(fd, line, n) < 0) disabled = 1;
}

/* The log's descriptor moved out of the program's way: a program started without stdin
 * (<&-) would find the log as its fd 0, and one that opens or dup2()s a low number of its own
 * (a shell's exec 3>file) could take ours. */
static int above_streams(int got) {
    if (got < 0) return got;
    int high = fcntl(got, F_DUPFD_CLOEXEC, 200);
    if (high < 0) high = fcntl(got, F_DUPFD_CLOEXEC, 3);  /* a limit below 200 descriptors */
    if (high < 0) return got;
    close(got);
    return high;
}

static int open_log(void) {
    pid_t pid = getpid();
    if (fd >= 0 && fd_pid == pid) return 1;
    if (fd >= 0) {  /* a forked child: its own file, its own first reads */
        close(fd);
        fd = -1;
        memset(hashes, 0, sizeof hashes);
        memset(counts, 0, sizeof counts);
    }
    if (!folder_known) {
        const char *d = real_getenv ? real_getenv("RUNSNAP_TRACE_DIR") : NULL;
        folder_known = 1;
        if (!d || strlen(d) >= sizeof folder - 64) { disabled = 1; return 0; }
        strcpy(folder, d);
    }
    char path[sizeof folder + 64];
    char digits[24];
    int i = 23;
    unsigned long v = (unsigned long)pid;
    digits[i] = 0;
    do { digits[--i] = (char)('0' + v % 10); v /= 10; } while (v && i > 0);
    size_t lf = strlen(folder);
    memcpy(path, folder, lf);
    strcpy(path + lf, "/native-");
    strcat(path, digits + i);
    strcat(path, ".log");
    fd = above_streams(open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    fd_pid = pid;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { disabled = 1; return 0; }
    fd_dev = st.st_dev;
    fd_ino = st.st_ino;
    return 1;
}

static void note(const char *name, const char *value) {
    if (disabled || busy || !name) return;
    size_t len = strlen(name);
    if (len == 0 || len > NAME_MAX_LEN) return;
    busy = 1;
    pthread_mutex_lock(&lock);
    if (open_log()) {
        unsigned long h = hash(name);
        unsigned long slot = h % SLOTS;
        for (int probe = 0; probe < SLOTS; probe++, slot = (slot + 1) % SLOTS) {
            if (hashes[slot] == 0) {
                hashes[slot] = h;
                counts[slot] = 1;
                memcpy(names[slot], name, len + 1);
                put(value ? "1" : "0", "\t", name);
                break;
            }
            if (hashes[slot] == h && strcmp(names[slot], name) == 0) {
                counts[slot]++;
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    busy = 0;
}

char *getenv(const char *name) {
    resolve();
    char *value = real_getenv ? real_getenv(name) : NULL;
    note(name, value);
    return value;
}

char *secure_getenv(const char *name) {
    resolve();
    char *value = real_secure_getenv ? real_secure_getenv(name) : NULL;
    note(name, value);
    return value;
}

__attribute__((destructor)) static void flush_counts(void) {
    if (disabled || fd < 0 || fd_pid != getpid()) return;
    pthread_mutex_lock(&lock);
    for (int slot = 0; slot < SLOTS; slot++) {
        if (hashes[slot] && counts[slot] > 1) {
            char digits[24];
            int i = 23;
            unsigned long v = counts[slot];
            digits[i] = 0;
            do { digits[--i] = (char)('0' + v % 10); v /= 10; } while (v && i > 0);
            char head[32] = "#\t";
            strcat(head, digits + i);
            strcat(head, "\t");
            put(head, names[slot], "");
        }
    }
    pthread_mutex_unlock(&lock);
}
