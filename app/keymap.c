/* The explorer's key table (see keymap.h).  The help overlay is generated
 * from it, so a key added here is documented there. */
#include "keymap.h"

#include <stddef.h>

#include "keys.h"

const fl_xkey fl_xkeys[] = {
	{'n', FL_X_NEXT, 0, "n Space", "next decision"},
	{' ', FL_X_NEXT, 0, NULL, NULL},
	{'N', FL_X_BACK, 0, "N b", "previous decision (exactly that state)"},
	{'b', FL_X_BACK, 0, NULL, NULL},
	{'p', FL_X_NEXT_PASS, 0, "p", "to the end of the current pass"},
	{'P', FL_X_PREV_PASS, 0, "P", "to the start of this (or the previous) pass"},
	{'r', FL_X_TO_END, 0, "r", "run the compiler to the end"},
	{'g', FL_X_GOTO, 0, "g", "go to step k"},
	{'/', FL_X_FIND, 0, "/", "find an op by name"},
	{'m', FL_X_MARK, 0, "m", "mark / unmark the selected op (two at most)"},
	{'w', FL_X_WHY, 0, "w", "why (not) fused: the two marked ops"},
	{'f', FL_X_FORBID, 0, "f", "forbid fusing the two marked ops, re-run"},
	{'F', FL_X_FORCE, 0, "F", "force fusing the two marked ops, re-run"},
	{'o', FL_X_OVERRIDES, 0, "o", "overrides: list, remove (d), save (S), load (L)"},
	{'R', FL_X_RUN, 0, "R", "compile and run every strategy (background)"},
	{FL_KEY_ESC, FL_X_CANCEL, 0, "Esc", "cancel the run, the prompt or the overlay"},
	{'e', FL_X_EXPORT, 0, "e", "export: the view's picture (.svg .png .dot) or the report (.json)"},
	{'s', FL_X_STRATEGY, 0, "s", "switch strategy (unfused, xla, apollo-l1, apollo-l2, apollo)"},
	{'t', FL_X_TOUR, 0, "t", "next tour stop"},
	{'x', FL_X_SWAP, 0, "x", "switch pane focus (or to the other view)"},
	{FL_KEY_TAB, FL_X_NEXT_VIEW, 0, "Tab", "next view"},
	{FL_KEY_BTAB, FL_X_PREV_VIEW, 0, "S-Tab", "previous view"},
	{'1', FL_X_VIEW, 0, "1-8", "graph decisions schedule domain memory parallel timings code"},
	{'2', FL_X_VIEW, 1, NULL, NULL},
	{'3', FL_X_VIEW, 2, NULL, NULL},
	{'4', FL_X_VIEW, 3, NULL, NULL},
	{'5', FL_X_VIEW, 4, NULL, NULL},
	{'6', FL_X_VIEW, 5, NULL, NULL},
	{'7', FL_X_VIEW, 6, NULL, NULL},
	{'8', FL_X_VIEW, 7, NULL, NULL},
	{'?', FL_X_HELP, 0, "?", "this help"},
	{'q', FL_X_QUIT, 0, "q", "quit"},
	{0, FL_X_NONE, 0, NULL, NULL},
};

const fl_xkey *fl_xkey_find(int key)
{
	for (const fl_xkey *k = fl_xkeys; k->key; k++)
		if (k->key == key)
			return k;
	return NULL;
}
