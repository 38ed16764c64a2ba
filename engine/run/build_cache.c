/* The build cache: compiled gen.so files kept by their exact input, so
 * that a source compiled once with one compiler command is not compiled
 * again (compile.c asks here before running the compiler).
 *
 * It is off unless $FUSELAB_BUILD_CACHE names a directory; `make test`
 * gives its two passes a fresh one, shared, because the suites compile
 * the same generated C many times (the same samples under the same
 * strategies, in the plain and in the sanitizer pass) and compiling is
 * most of their time.  Only successful builds are kept.
 *
 * An entry is a directory named by a 64-bit FNV-1a hash of its key (the
 * compiler command, the flags asked for and the whole source) holding
 *     key       the key itself: a hit needs it equal byte for byte, so a
 *               hash collision is a miss, never a wrong program;
 *     build     the compiler command and the flags it built with (the
 *               flags differ from those asked for when libmvec was left
 *               out);
 *     gen.so    the shared object;
 *     cc.log    the compiler's output (its warnings are the build's).
 * An entry is written into a fresh temporary directory and renamed into
 * place, so readers (another fuselab, the other test pass) never see half
 * of one; when two processes store the same entry the second rename fails
 * and its copy is removed.  A compiler named by a path is never cached:
 * tests swap scripts behind such paths.
 *
 * A process about to compile an entry holds a lock on it (the file
 * .<hash>.lock beside the entry, flock'd), and one that finds the entry
 * missing waits for that lock, then looks again: the two test passes
 * reach the same programs at about the same time, and without the wait
 * both compiled them.  flock is released when its holder dies, so a
 * killed compile never blocks another.
 *
 * Everything here is best effort: a cache that cannot be read or written
 * means compiling as usual.  Nothing here prints. */
#include "run_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_ENV "FUSELAB_BUILD_CACHE"
#define CACHE_DIR_MAX 512	/* longer names turn the cache off */
#define LOCK_WAIT_MAX_S 600	/* as long as a compile may take */

/* The files of one entry besides its key and build record. */
static const char *const entry_files[] = {"gen.so", "cc.log"};

const char *fl_build_cache_dir(const char *compiler)
{
	const char *dir = getenv(CACHE_ENV);

	if (!dir || !*dir || strlen(dir) > CACHE_DIR_MAX ||
	    strchr(compiler, '/'))
		return NULL;
	return dir;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* dir/<hash of key>[/name] into path (cut at n). */
static void entry_path(const char *dir, const char *key, const char *name,
		       char *path, size_t n)
{
	unsigned long long h = fnv1a(key, strlen(key));

	if (name)
		snprintf(path, n, "%s/%016llx/%s", dir, h, name);
	else
		snprintf(path, n, "%s/%016llx", dir, h);
}

/* dir/.<hash of key>.lock into path (cut at n). */
static void lock_path(const char *dir, const char *key, char *path, size_t n)
{
	unsigned long long h = fnv1a(key, strlen(key));

	snprintf(path, n, "%s/.%016llx.lock", dir, h);
}

/* The whole file at path (malloc'd, NUL-terminated, its length in *len);
 * NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) &&
	    fread(text, 1, (size_t)n, f) == (size_t)n) {
		text[n] = '\0';
		*len = (size_t)n;
	} else {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

/* Copies file from to a new file to (mode 0700); -1 on any failure. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (out < 0)
		goto done;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto done;
	rc = n == 0 ? 0 : -1;
done:
	if (out >= 0 && close(out) != 0)
		rc = -1;
	close(in);
	return rc;
}

/* Whether entry dir/<hash> holds exactly key. */
static bool key_matches(const char *dir, const char *key)
{
	char path[700];
	size_t len;
	char *stored;
	bool same;

	entry_path(dir, key, "key", path, sizeof path);
	stored = read_all(path, &len);
	same = stored && len == strlen(key) && !memcmp(stored, key, len);
	free(stored);
	return same;
}

/* Reads the entry's build record ("compiler\nflags\n") into b. */
static int read_build_record(const char *dir, const char *key, fl_build *b)
{
	char path[700], *text, *flags, *end;
	size_t len;

	entry_path(dir, key, "build", path, sizeof path);
	text = read_all(path, &len);
	if (!text)
		return -1;
	flags = strchr(text, '\n');
	end = flags ? strchr(flags + 1, '\n') : NULL;
	if (!end) {
		free(text);
		return -1;
	}
	*flags++ = *end = '\0';
	snprintf(b->compiler, sizeof b->compiler, "%s", text);
	snprintf(b->flags, sizeof b->flags, "%s", flags);
	free(text);
	return 0;
}

bool fl_build_cache_fetch(const char *dir, const char *key, fl_build *b)
{
	char from[700], to[700];

	if (!key_matches(dir, key) || read_build_record(dir, key, b) < 0)
		return false;
	for (size_t i = 0; i < sizeof entry_files / sizeof *entry_files; i++) {
		entry_path(dir, key, entry_files[i], from, sizeof from);
		fl_run_path(b->workdir, entry_files[i], to, sizeof to);
		if (copy_file(from, to) < 0)
			return false;	/* the compiler overwrites both */
	}
	b->cached = true;
	return true;
}

/* Removes the files of a temporary entry directory, then the directory. */
static void remove_temp_entry(const char *tmp)
{
	static const char *const all[] = {"key", "build", "gen.so", "cc.log"};
	char path[700];

	for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
		snprintf(path, sizeof path, "%s/%s", tmp, all[i]);
		unlink(path);
	}
	rmdir(tmp);
}

/* Writes the key, the build record and copies of the entry's files from
 * the work directory into tmp; -1 on any failure. */
static int fill_temp_entry(const char *tmp, const char *key,
			   const fl_build *b)
{
	char record[sizeof b->compiler + sizeof b->flags + 2];
	char path[700], from[700];
	fl_error err;
	int rc;

	snprintf(path, sizeof path, "%s/key", tmp);
	if (fl_run_write_file(path, key, &err) < 0)
		return -1;
	snprintf(record, sizeof record, "%s\n%s\n", b->compiler, b->flags);
	snprintf(path, sizeof path, "%s/build", tmp);
	rc = fl_run_write_file(path, record, &err);
	for (size_t i = 0; rc == 0 && i < sizeof entry_files /
	     sizeof *entry_files; i++) {
		fl_run_path(b->workdir, entry_files[i], from, sizeof from);
		snprintf(path, sizeof path, "%s/%s", tmp, entry_files[i]);
		rc = copy_file(from, path);
	}
	return rc;
}

void fl_build_cache_store(const char *dir, const char *key, const fl_build *b)
{
	char tmp[600], final[700];

	if (b->status != FL_RUN_OK || b->cached)
		return;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	snprintf(tmp, sizeof tmp, "%s/tmp-XXXXXX", dir);
	if (!mkdtemp(tmp))
		return;
	entry_path(dir, key, NULL, final, sizeof final);
	/* a rename onto an entry stored meanwhile fails: keep that one */
	if (fill_temp_entry(tmp, key, b) < 0 || rename(tmp, final) < 0)
		remove_temp_entry(tmp);
}

/* Whether fd's lock is ours: LOCK_EX tried every few ms (so that a
 * cancel stops the wait) for at most LOCK_WAIT_MAX_S. */
static bool wait_for_lock(int fd, const fl_run_opts *o)
{
	struct timespec nap = {0, 5000000};
	long waited_ms = 0;

	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if ((errno != EWOULDBLOCK && errno != EINTR) ||
		    fl_run_cancelled(o) || waited_ms > LOCK_WAIT_MAX_S * 1000L)
			return false;
		nanosleep(&nap, NULL);
		waited_ms += 5;
	}
	return true;
}

int fl_build_cache_lock(const char *dir, const char *key,
			const fl_run_opts *o)
{
	char path[700];
	int fd;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	lock_path(dir, key, path, sizeof path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (!wait_for_lock(fd, o)) {
		close(fd);
		return -1;
	}
	return fd;
}

void fl_build_cache_unlock(int fd)
{
	if (fd >= 0)
		close(fd);	/* and with it the lock */
}
