/* The explorer's one key table (DESIGN 7): every key the explorer itself
 * handles, with the label and text the help overlay shows.  Keys not in
 * the table go to the view in focus (views/view.h). */
#ifndef FL_APP_KEYMAP_H
#define FL_APP_KEYMAP_H

typedef enum fl_xact {
	FL_X_NONE,
	FL_X_NEXT, FL_X_BACK, FL_X_NEXT_PASS, FL_X_PREV_PASS, FL_X_TO_END,
	FL_X_GOTO, FL_X_FIND, FL_X_MARK, FL_X_WHY, FL_X_FORBID, FL_X_FORCE,
	FL_X_OVERRIDES, FL_X_RUN, FL_X_CANCEL, FL_X_EXPORT, FL_X_STRATEGY,
	FL_X_TOUR, FL_X_SWAP, FL_X_NEXT_VIEW, FL_X_PREV_VIEW, FL_X_VIEW,
	FL_X_HELP, FL_X_QUIT,
} fl_xact;

typedef struct fl_xkey {
	int key;
	fl_xact act;
	int arg;		/* FL_X_VIEW: the view's number - 1 */
	const char *label;	/* shown in help; NULL: an alias of the row
				   above */
	const char *help;
} fl_xkey;

/* The table, terminated by a row with key 0. */
extern const fl_xkey fl_xkeys[];

/* The row for key, NULL when the explorer does not own it. */
const fl_xkey *fl_xkey_find(int key);

#endif
