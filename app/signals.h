/* SIGINT and SIGTERM in the batch modes that compile and run kernels
 * (--run, --stage compile/run): the handler only records the signal in a
 * flag that the engine polls (fl_run_opts.interrupt); the engine then
 * kills the compiler's or the test child's process group, removes the
 * work directory it created, and returns; fuselab says so on one line
 * and exits 128 + the signal (130, 143).  A second signal kills at once
 * (the children then die with their parent: PR_SET_PDEATHSIG). */
#ifndef FL_APP_SIGNALS_H
#define FL_APP_SIGNALS_H

#include <signal.h>

/* Installs the handlers (once; later calls do nothing). */
void fl_app_signals_install(void);

/* The flag the handler sets (to the signal's number); 0 until then. */
const volatile sig_atomic_t *fl_app_signal_flag(void);

/* The signal received, 0 when none. */
int fl_app_signal(void);

/* Prints "fuselab: interrupted; stopped the WHAT and removed DIR" (the
 * part after "interrupted" only when what is set, "and removed DIR" only
 * when dir is set) on stderr; returns the exit status, 128 + signal. */
int fl_app_interrupted(const char *what, const char *dir);

#endif
