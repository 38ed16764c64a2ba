/* Key codes the explorer hands to views, independent of curses: a
 * printable character is itself; the rest are the codes below.  app/tui.c
 * translates terminal input into these. */
#ifndef FL_KEYS_H
#define FL_KEYS_H

enum {
	FL_KEY_ENTER = '\n',
	FL_KEY_ESC = 27,
	FL_KEY_TAB = '\t',
	FL_KEY_BACKSPACE = 127,
	FL_KEY_UP = 0x110000,
	FL_KEY_DOWN, FL_KEY_LEFT, FL_KEY_RIGHT,
	FL_KEY_PGUP, FL_KEY_PGDN, FL_KEY_HOME, FL_KEY_END,
	FL_KEY_BTAB,		/* shift-Tab */
	FL_KEY_MOUSE,		/* a click: position in the view context */
	FL_KEY_RESIZE,
};

#endif
