/* Non-interactive modes: --check, --batch [--interpret], --list-ops. */
#ifndef FL_APP_BATCH_H
#define FL_APP_BATCH_H

#include "graph.h"
#include "options.h"

/* Loads o->file, or the built-in sample when it is NULL.  NULL + message. */
fl_graph *fl_app_load(const fl_options *o, fl_error *err);

/* Engine options from the command line; -1 (message printed) on bad
 * input (rules file, rule ids). */
struct fl_engine_opts;
int fl_app_engine_opts(const fl_options *o, struct fl_engine_opts *eo);

/* --rules, --disable-rule and --overrides checked whatever runs (a bad
 * rules or overrides file is an error even when no engine pass reads
 * it); -1, message printed, when they are bad. */
int fl_app_check_rules(const fl_options *o);

/* The op names of --overrides FILE checked against graph g, the message
 * naming the file ("o.json: overrides[1].ops[0]: no op named ...");
 * 0 when there is no such option, -1 with the message printed. */
int fl_app_check_overrides(const fl_options *o, const fl_graph *g);

int fl_batch_check(const fl_options *o);
int fl_batch_run(const fl_options *o);
int fl_batch_list_ops(void);

/* Text from input files (names, docs, messages that quote them) as the
 * terminal may show it: control characters and DEL written as \xNN, so
 * that a name cannot send escape sequences.  fl_safe_text keeps newlines
 * and tabs (multi-line text).  Returns s itself when nothing needs
 * escaping, else one of 8 buffers used in turn (valid until 8 more calls). */
const char *fl_safe_name(const char *s);
const char *fl_safe_text(const char *s);

/* A name from an input file as one safe file-name component (names
 * never form paths): letters, digits, '-', '_' and '.' (not leading)
 * kept, other bytes '_', at most 64 bytes, "graph" when empty. */
void fl_app_file_name(const char *name, char *out, size_t n);


#endif
