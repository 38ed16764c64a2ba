/* Saving and loading the explorer's overrides (S and L in the overrides
 * list): the fuselab-overrides/1 file that --overrides FILE also reads
 * (overrides.h). */
#include "explorer_impl.h"

static void save(fl_explorer *x, const char *path)
{
	fl_error err = {""};

	if (fl_overrides_save(path, x->overrides, x->graph->name, &err) < 0)
		fl_x_say(x, FL_LOOK_BAD, "%s", err.msg);
	else
		fl_x_say(x, FL_LOOK_OK, "saved %d override%s to %s (fuselab "
			 "--overrides %s reads them)",
			 fl_overrides_count(x->overrides),
			 fl_overrides_count(x->overrides) == 1 ? "" : "s", path,
			 path);
}

/* The loaded list replaces the current one only when it is good and
 * its ops exist in this graph. */
static void load(fl_explorer *x, const char *path)
{
	fl_error err = {""};
	fl_overrides *l = NULL;
	char label[600];

	if (fl_overrides_load(path, &l, &err) < 0 ||
	    fl_overrides_check(l, x->graph, path, &err) < 0) {
		fl_overrides_free(l);
		fl_x_say(x, FL_LOOK_BAD, "%s", err.msg);
		return;
	}
	fl_overrides_free(x->overrides);
	x->overrides = l;
	x->override_cursor = 0;
	snprintf(label, sizeof label, "loaded %d override%s from %s",
		 fl_overrides_count(l), fl_overrides_count(l) == 1 ? "" : "s",
		 path);
	fl_x_apply_overrides(x, label);
}

void fl_x_overrides_file(fl_explorer *x, bool save_it, const char *path)
{
	if (!path[0]) {
		fl_x_say(x, FL_LOOK_WARN, "no file named");
		return;
	}
	if (save_it)
		save(x, path);
	else
		load(x, path);
}
