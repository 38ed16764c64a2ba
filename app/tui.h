/* The interactive explorer (ncurses).  Returns the process exit status. */
#ifndef FL_APP_TUI_H
#define FL_APP_TUI_H

#include "options.h"

int fl_tui_main(const fl_options *o);

#endif
