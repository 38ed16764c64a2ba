/* libFuzzer harness: a rules file (--rules FILE, DESIGN 3), read over
 * the default table by fl_rules_load_string.  Whatever the bytes, it
 * loads or fails with a message; never a crash, a leak or undefined
 * behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fl_rule_table t;
	char *text = malloc(size + 1);
	fl_error err;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;	/* the loader takes a C string, as files are read */
	fl_rules_default(&t);
	fl_rules_load_string(&t, text, "fuzz", &err);
	free(text);
	return 0;
}
