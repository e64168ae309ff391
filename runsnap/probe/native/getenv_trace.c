/* runsnap's native read recorder: an LD_PRELOAD library that interposes getenv() and
 * secure_getenv(), so reads made by C, C++ and Rust code (libnccl.so, libcudart.so, ...) are
 * recorded beside the Python-level ones.
 *
 * Each call is passed to the C library's own function (found with dlsym(RTLD_NEXT)) and its
 * answer returned unchanged. The first read of each name in a process is appended to
 * $RUNSNAP_TRACE_DIR/native-<pid>.log as "<0|1>\t<name>\t<when>\n" (1: it was set), with one
 * write(2) per line, so a killed process loses nothing already read. Later reads of the same
 * name only increment a counter, written as "#\t<count>\t<name>\n" lines when the process exits
 * normally.
 *
 * <when> says whether the read was part of a start-up rather than a decision taken while the
 * program ran: "S" while the interpreter is not (or no longer) initialised (CPython's own
 * start-up: getpath reads PATH), "L" while the dynamic loader runs a library's constructors
 * (ld.so's frames on the stack: libgomp's initialize_env reads OMP_*), "I" while Python imports
 * a library (an importlib frame on the Python stack of the thread that holds the GIL, and the
 * innermost module body there an installed package's or Python's own: an extension's module
 * init; not the program's own module calling into a library as it is imported), else "R".
 * A name first read at start-up that is read again while the program runs gets one more line,
 * "R\t<name>\n". Telling costs, with the GIL held, a walk of the Python frames, and else a
 * backtrace(3): only for a name with no "R" read yet.
 * Nothing is ever printed, and a failure of ours only stops the recording.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
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
static char late[SLOTS];  /* a read while the program ran ("R") has been written */
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

/* CPython's API, found in the running process (absent in a process without Python). */
typedef int (*int_fn)(void);
typedef void *(*ptr_fn)(void);
typedef void *(*ptr1_fn)(void *);
typedef void *(*attr_fn)(void *, const char *);
typedef const char *(*utf8_fn)(void *);
typedef void (*decref_fn)(void *);
typedef void (*fetch_fn)(void **, void **, void **);
typedef void (*restore_fn)(void *, void *, void *);
static struct {
    int looked;
    int_fn initialized, gil_held;
    ptr_fn frame;
    ptr1_fn back, code;
    attr_fn getattr;
    utf8_fn utf8;
    decref_fn decref;
    fetch_fn fetch;
    restore_fn restore;
} py;

static void find_python(void) {
    if (py.looked) return;
    py.looked = 1;
    py.initialized = (int_fn)dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    py.gil_held = (int_fn)dlsym(RTLD_DEFAULT, "PyGILState_Check");
    py.frame = (ptr_fn)dlsym(RTLD_DEFAULT, "PyEval_GetFrame");
    py.back = (ptr1_fn)dlsym(RTLD_DEFAULT, "PyFrame_GetBack");
    py.code = (ptr1_fn)dlsym(RTLD_DEFAULT, "PyFrame_GetCode");
    py.getattr = (attr_fn)dlsym(RTLD_DEFAULT, "PyObject_GetAttrString");
    py.utf8 = (utf8_fn)dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
    py.decref = (decref_fn)dlsym(RTLD_DEFAULT, "Py_DecRef");
    py.fetch = (fetch_fn)dlsym(RTLD_DEFAULT, "PyErr_Fetch");
    py.restore = (restore_fn)dlsym(RTLD_DEFAULT, "PyErr_Restore");
}

/* Whether a frame of the dynamic loader is on this thread's stack: a library's constructor. */
static int in_loader(void) {
    void *frames[64];
    int n = backtrace(frames, 64);
    for (int i = 1; i < n; i++) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname) {
            const char *base = strrchr(info.dli_fname, '/');
            base = base ? base + 1 : info.dli_fname;
            if (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld.so", 5) == 0
                || strncmp(base, "ld-", 3) == 0)
                return 1;
        }
    }
    return 0;
}

/* A module body's file of an installed package or of Python's own library (not the
 * program's own code, whose module bodies decide what the program does). */
static int library_file(const char *file) {
    return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/")
           || (strstr(file, "/lib/python") && !strstr(file, "-packages/"));
}

/* Whether the Python stack of this thread (which holds the GIL) runs an import of a library:
 * an importlib frame on it, and the innermost module body on it a library's (torch's
 * __init__.py importing its extension; not the program's own module calling into torch), or
 * the innermost frame importlib's own: native code importlib called, an extension module's
 * initialisation (``from mpi4py import MPI`` in the program calls MPI_Init from mpi4py.MPI's
 * exec, with no module body of the library's on the Python stack). */
static int in_import(void) {
    if (!(py.gil_held && py.frame && py.back && py.code && py.getattr && py.utf8 && py.decref
          && py.fetch && py.restore) || !py.gil_held())
        return 0;
    void *type, *val, *tb;
    py.fetch(&type, &val, &tb);  /* an exception in flight stays as it was */
    int importing = 0, module = -1;  /* module: the innermost body's file is a library's */
    int extension = 0;  /* the innermost frame is importlib's: an extension's init runs */
    void *frame = py.frame();  /* borrowed */
    void *owned = NULL;
    for (int depth = 0; frame && depth < 200 && !(importing && (module >= 0 || extension));
         depth++) {
        void *code = py.code(frame);
        if (code) {
            void *file = py.getattr(code, "co_filename");
            void *name = module < 0 ? py.getattr(code, "co_name") : NULL;
            const char *f = file ? py.utf8(file) : NULL;
            const char *n = name ? py.utf8(name) : NULL;
            if (f && strncmp(f, "<frozen importlib._bootstrap", 28) == 0) {
                importing = 1;
                if (depth == 0) extension = 1;
            }
            else if (f && n && strcmp(n, "<module>") == 0) module = library_file(f);
            if (file) py.decref(file);
            if (name) py.decref(name);
            py.decref(code);
        }
        void *next = py.back(frame);  /* a new reference */
        if (owned) py.decref(owned);
        owned = next;
        frame = next;
    }
    if (owned) py.decref(owned);
    py.restore(type, val, tb);
    return importing && (module == 1 || extension);
}

static char when(void) {
    find_python();
    if (py.initialized && !py.initialized()) return 'S';
    if (in_import()) return 'I';  /* before the backtrace, which costs more: a dlopen under an
                                   * import (torch's _C) is an import's start-up either way */
    if (in_loader()) return 'L';
    return 'R';
}

/* The slot of a name (new: hashes[slot] == 0), or -1 when the table is full. */
static int slot_of(const char *name, unsigned long h) {
    unsigned long slot = h % SLOTS;
    for (int probe = 0; probe < SLOTS; probe++, slot = (slot + 1) % SLOTS) {
        if (hashes[slot] == 0 || (hashes[slot] == h && strcmp(names[slot], name) == 0))
            return (int)slot;
    }
    return -1;
}

static void note(const char *name, const char *value) {
    if (disabled || busy || !name) return;
    size_t len = strlen(name);
    if (len == 0 || len > NAME_MAX_LEN) return;
    busy = 1;
    unsigned long h = hash(name);
    pthread_mutex_lock(&lock);
    int slot = slot_of(name, h);
    int known_late = slot >= 0 && hashes[slot] != 0 && late[slot];
    if (known_late) counts[slot]++;
    pthread_mutex_unlock(&lock);
    if (known_late || slot < 0) { busy = 0; return; }
    /* outside the lock: dladdr takes the loader's lock, which a thread in dlopen holds while
     * its constructors read (and wait for ours) */
    char phase[3] = {'\t', when(), 0};
    pthread_mutex_lock(&lock);
    if (open_log() && (slot = slot_of(name, h)) >= 0) {
        if (hashes[slot] == 0) {
            hashes[slot] = h;
            counts[slot] = 1;
            late[slot] = phase[1] == 'R';
            memcpy(names[slot], name, len + 1);
            put(value ? "1\t" : "0\t", name, phase);
        } else {
            counts[slot]++;
            if (!late[slot] && phase[1] == 'R') {
                late[slot] = 1;
                put("R\t", name, "");
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
