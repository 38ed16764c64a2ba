/* Names of the code generation targets (target.h). */
#include <string.h>

#include "target.h"

static const char *const target_names[FL_TARGET_COUNT] = {
	[FL_TARGET_CPU] = "cpu",
	[FL_TARGET_CUDA] = "cuda",
};

const char *fl_target_name(fl_target t)
{
	if ((int)t < 0 || (int)t >= FL_TARGET_COUNT)
		return "?";
	return target_names[t];
}

int fl_target_parse(const char *s, fl_target *t)
{
	for (int i = 0; s && i < FL_TARGET_COUNT; i++)
		if (strcmp(s, target_names[i]) == 0) {
			*t = (fl_target)i;
			return 0;
		}
	return -1;
}
