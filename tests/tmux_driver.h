/* Driving the real explorer in a detached tmux session of fixed size
 * (its own tmux server socket, no user config): start it, send keys,
 * read the screen, wait for text, resize, and read the exit status. */
#ifndef FL_TMUX_DRIVER_H
#define FL_TMUX_DRIVER_H

#include <stdbool.h>

typedef struct t_tmux {
	char socket[64];	/* tmux -L name */
	char status_file[300];	/* where the shell writes fuselab's status */
	char dir[256];		/* a fresh working directory */
} t_tmux;

/* Starts "fuselab ARGS" in a w x h session, in a fresh directory, and
 * waits until the explorer's status line shows. */
void t_tmux_start(t_tmux *t, int w, int h, const char *args);
/* Sends keys as tmux send-keys words ("n", "Enter", "Escape", "C-c");
 * a word given with literal=true is typed as text. */
void t_tmux_keys(t_tmux *t, const char *keys);
void t_tmux_type(t_tmux *t, const char *text);
/* The screen as text (malloc'd). */
char *t_tmux_screen(t_tmux *t);
/* Waits up to timeout_s for text on the screen; fails the test with the
 * screen when it does not show. */
void t_tmux_wait_for(t_tmux *t, const char *text, double timeout_s);
/* True when text is on the screen now. */
bool t_tmux_shows(t_tmux *t, const char *text);
void t_tmux_resize(t_tmux *t, int w, int h);
/* Waits for fuselab to exit and returns its exit status (-1 when it did
 * not exit within timeout_s); checks the terminal left the alternate
 * screen (restored), and fails the test with the report when the
 * sanitizer build's runtime wrote one (ASan, LeakSanitizer, UBSan: the
 * session sends them to files in dir). */
int t_tmux_exit_status(t_tmux *t, double timeout_s);
/* Kills the session and its server, removes the directory. */
void t_tmux_stop(t_tmux *t);
/* A cmocka teardown: stops the session a failed test left running. */
int t_tmux_teardown(void **state);

#endif
