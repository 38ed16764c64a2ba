#include "explorer_impl.h"
void fl_x_overrides_file(fl_explorer *x, bool save, const char *path)
{
	fl_x_say(x, FL_LOOK_BAD, "%s %s: later", save ? "save" : "load", path);
}
