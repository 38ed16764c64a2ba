/* bench/ort_peer.mjs as a child process (see ort_peer.h). */
#include "ort_peer.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_MODULE "build/ort/node_modules/onnxruntime-node"
#define DEFAULT_SCRIPT "bench/ort_peer.mjs"
#define MAX_ARGS 64

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

/* Whether `node` is on the PATH. */
static int have_node(void)
{
	return system("command -v node >/dev/null 2>&1") == 0;
}

const char *ort_peer_module(char *why, size_t n)
{
	const char *dir = env_or("FL_ORT_DIR", DEFAULT_MODULE);
	char pkg[1024];
	struct stat st;

	if (!have_node()) {
		snprintf(why, n, "no Node.js (node) on the PATH");
		return NULL;
	}
	snprintf(pkg, sizeof pkg, "%s/package.json", dir);
	if (stat(pkg, &st) != 0) {
		snprintf(why, n, "onnxruntime-node is not installed in %s "
			 "(scripts/install-deps.sh --bench installs it)", dir);
		return NULL;
	}
	return dir;
}

const char *ort_peer_version(const char *module, char *buf, size_t n)
{
	char path[1024], text[4096];
	FILE *f;
	size_t got = 0;
	const char *v;

	snprintf(buf, n, "unknown");
	snprintf(path, sizeof path, "%s/package.json", module);
	if (!(f = fopen(path, "r")))
		return buf;
	got = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[got] = '\0';
	v = strstr(text, "\"version\"");
	if (v && (v = strchr(v + 9, '"')))
		snprintf(buf, n, "%.*s", (int)strcspn(v + 1, "\""), v + 1);
	return buf;
}

/* One line from the child into buf (newline dropped); -1 at its end. */
static int read_line(ort_peer *p, char *buf, size_t n)
{
	size_t len;

	if (!fgets(buf, (int)n, p->from))
		return -1;
	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return 0;
}

static void start_child(int in_fd, int out_fd, char *const *argv)
{
	dup2(in_fd, 0);
	dup2(out_fd, 1);
	execvp(argv[0], argv);
	_exit(127);
}

int ort_peer_open(ort_peer *p, const char *module, const char *model,
		  int threads, const char *const *feeds, int n_feeds,
		  char *why, size_t n)
{
	int down[2], up[2];
	char thr[16], line[1024] = "";
	char *argv[MAX_ARGS];
	int k = 0;

	memset(p, 0, sizeof *p);
	p->pid = -1;
	if (n_feeds > MAX_ARGS - 6) {
		snprintf(why, n, "too many inputs (%d)", n_feeds);
		return -1;
	}
	snprintf(thr, sizeof thr, "%d", threads);
	argv[k++] = "node";
	argv[k++] = (char *)env_or("FL_ORT_PEER", DEFAULT_SCRIPT);
	argv[k++] = (char *)module;
	argv[k++] = (char *)model;
	argv[k++] = thr;
	for (int i = 0; i < n_feeds; i++)
		argv[k++] = (char *)feeds[i];
	argv[k] = NULL;
	/* a peer that dies must not take the benchmark with it: writes to
	   its pipe then fail with EPIPE instead of killing this process */
	signal(SIGPIPE, SIG_IGN);
	if (pipe(down) < 0 || pipe(up) < 0) {
		snprintf(why, n, "no pipe for the child");
		return -1;
	}
	fflush(stdout);
	p->pid = fork();
	if (p->pid == 0) {
		close(down[1]);
		close(up[0]);
		start_child(down[0], up[1], argv);
	}
	close(down[0]);
	close(up[1]);
	if (p->pid < 0) {
		close(down[1]);
		close(up[0]);
		snprintf(why, n, "cannot start node");
		return -1;
	}
	p->to = fdopen(down[1], "w");
	p->from = fdopen(up[0], "r");
	if (!p->to || !p->from || read_line(p, line, sizeof line) < 0 ||
	    strncmp(line, "ready ", 6) != 0) {
		snprintf(why, n, "%.400s", p->from && line[0] ? line :
			 "the peer ended before it was ready");
		ort_peer_close(p);
		return -1;
	}
	snprintf(p->version, sizeof p->version, "%.63s", line + 6);
	return 0;
}

double ort_peer_run(void *ctx)
{
	ort_peer *p = ctx;
	char line[128];

	if (fputs("run\n", p->to) < 0 || fflush(p->to) != 0 ||
	    read_line(p, line, sizeof line) < 0 || strncmp(line, "ok ", 3))
		return -1;
	return strtod(line + 3, NULL);
}

int ort_peer_dump(ort_peer *p, const char *path)
{
	char line[128];

	if (fprintf(p->to, "dump %s\n", path) < 0 || fflush(p->to) != 0 ||
	    read_line(p, line, sizeof line) < 0)
		return -1;
	return strcmp(line, "ok") == 0 ? 0 : -1;
}

void ort_peer_close(ort_peer *p)
{
	if (p->to) {
		fputs("quit\n", p->to);
		fclose(p->to);
	}
	if (p->from)
		fclose(p->from);
	if (p->pid > 0) {
		int st;

		if (waitpid(p->pid, &st, 0) < 0)
			kill(p->pid, SIGKILL);
	}
	memset(p, 0, sizeof *p);
	p->pid = -1;
}
